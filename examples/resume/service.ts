/**
 * The real service as a child process (`node cli/main.ts serve`: the demo model, or the `agents`
 * module given; text only unless `voice` says otherwise) and a `/ws` client for it: what the
 * resume example, its tests and its benchmark drive. Each service listens on a free port of
 * 127.0.0.1 and journals to the store it is given.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import WebSocket from "ws"

const root = fileURLToPath(new URL("../..", import.meta.url))

export interface Service {
  readonly url: string
  readonly ws: string
  readonly child: ChildProcess
  /** Everything it printed so far. */
  readonly output: () => string
  readonly exited: Promise<number | null>
  /** Kills the process now, as a crash would (SIGKILL: no drain, no finalizer). */
  readonly crash: () => Promise<void>
}

export interface ServiceOptions {
  /** `BATON_STORE`: `sqlite:<path>` or a `postgres://` URL. */
  readonly store: string
  /** `BATON_TOKEN`, shared by the processes of a fleet (it signs the resume tokens). */
  readonly token: string
  readonly resumeSeconds?: number
  /** `--voice`: `off` (text only, the default here) or `local` (the offline voice pipeline). */
  readonly voice?: "off" | "local"
  /** `--agents`: a module of agents (and their model) instead of the front desk demo. */
  readonly agents?: string
  readonly env?: Record<string, string>
}

/** Starts `baton serve` and resolves once it listens (its banner printed). */
export const startService = async (options: ServiceOptions): Promise<Service> => {
  // the sources, as npm runs them (.npmrc), whether or not dist/ is built
  const args = ["serve", "--voice", options.voice ?? "off", ...(options.agents ? ["--agents", options.agents] : [])]
  const child = spawn(process.execPath, ["--conditions=baton-source", "cli/main.ts", ...args], {
    cwd: root,
    env: {
      ...process.env,
      PORT: "0",
      BATON_STORE: options.store,
      BATON_TOKEN: options.token,
      BATON_RESUME_S: String(options.resumeSeconds ?? 60),
      BATON_MAX_LAG_MS: "0",
      OPENAI_API_KEY: "",
      OPENAI_BASE_URL: "",
      ...options.env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  child.stdout!.on("data", (d) => (out += String(d)))
  child.stderr!.on("data", (d) => (out += String(d)))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  // The banner, however long a loaded machine takes to start node and the store (up to a minute:
  // a service that never starts is still caught); undefined if it exits first.
  const url = await new Promise<string | undefined>((resolve) => {
    const banner = () => {
      const m = out.match(/serving on (http:\/\/127\.0\.0\.1:\d+)/)
      if (m && out.includes("Voice:")) resolve(m[1]!)
    }
    child.stdout!.on("data", banner)
    child.stderr!.on("data", banner)
    void exited.then(() => resolve(undefined))
    setTimeout(() => resolve(undefined), 60_000).unref()
  })
  if (url === undefined) {
    child.kill("SIGKILL")
    throw new Error(`the service did not start:\n${out}`)
  }
  return {
    url,
    ws: url.replace("http://", "ws://"),
    child,
    output: () => out,
    exited,
    crash: async () => {
      child.kill("SIGKILL")
      await exited
    }
  }
}

/** An access token for `/ws` (or `route`: `twilio`), by POST /token with the shared secret. */
export const accessToken = async (service: Service, secret: string, route: "ws" | "twilio" = "ws"): Promise<string> => {
  const response = await fetch(`${service.url}/token?route=${route}`, { method: "POST", headers: { authorization: `Bearer ${secret}` } })
  if (!response.ok) throw new Error(`POST /token: ${response.status} ${await response.text()}`)
  return ((await response.json()) as { token: string }).token
}

export interface Client {
  readonly socket: WebSocket
  readonly frames: Array<any>
  /** The binary frames (the agents' audio as PCM16), in order. */
  readonly binary: Array<Buffer>
  readonly send: (message: unknown) => void
  readonly closed: Promise<{ readonly code: number; readonly reason: string }>
  /** The first frame (received already or to come) that matches. */
  readonly waitFor: (match: (frame: any) => boolean, what?: string, ms?: number) => Promise<any>
}

/** Opens a `/ws` connection and collects its JSON frames. */
export const connect = (url: string): Promise<Client> =>
  new Promise((resolve, reject) => {
    const socket = new WebSocket(url)
    const frames: Array<any> = []
    const binary: Array<Buffer> = []
    const waiters = new Set<() => void>()
    socket.on("message", (data, isBinary) => {
      if (isBinary) return void binary.push(data as Buffer)
      frames.push(JSON.parse(String(data)))
      for (const w of [...waiters]) w()
    })
    const closed = new Promise<{ code: number; reason: string }>((r) => socket.on("close", (code, reason) => r({ code, reason: String(reason) })))
    const waitFor = (match: (frame: any) => boolean, what = "a frame", ms = 15_000) =>
      new Promise<any>((res, rej) => {
        const timer = setTimeout(() => {
          waiters.delete(check)
          rej(new Error(`timed out waiting for ${what}; got ${JSON.stringify(frames.map((f) => f.type))}`))
        }, ms)
        const check = () => {
          const found = frames.find(match)
          if (found === undefined) return
          clearTimeout(timer)
          waiters.delete(check)
          res(found)
        }
        waiters.add(check)
        check()
      })
    socket.once("open", () => resolve({ socket, frames, binary, send: (m) => socket.send(JSON.stringify(m)), closed, waitFor }))
    socket.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)))
    socket.once("error", reject)
  })
