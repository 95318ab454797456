/**
 * A LiveKit server's agent dispatch, faithful to its protocol and nothing more: a WebSocket on
 * `/agent` (127.0.0.1) that checks the worker's token with livekit-server-sdk's `TokenVerifier`
 * (the `agent` grant), answers `register` and `ping`, and lets a test offer jobs
 * (`AvailabilityRequest`), assign them (`JobAssignment` with a room token), terminate them, send
 * malformed frames, and restart (drop every connection and listen again on the same port).
 * Every message a worker sends is recorded, decoded.
 */
import {
  AvailabilityRequest,
  Job,
  JobAssignment,
  JobTermination,
  JobType,
  RegisterWorkerResponse,
  Room,
  ServerMessage,
  WorkerMessage,
  WorkerPong
} from "@livekit/protocol"
import { AccessToken, TokenVerifier } from "livekit-server-sdk"
import { Effect, type Scope } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { WebSocket, WebSocketServer } from "ws"

export interface Received {
  readonly case: NonNullable<WorkerMessage["message"]["case"]>
  readonly value: any
  readonly connection: number
}

export interface FakeServer {
  readonly url: string
  readonly received: Array<Received>
  /** Connections refused for a bad token. */
  readonly refusedTokens: Array<string>
  readonly connections: () => number
  /** Resolves with the first received message (already or to come) that matches. */
  readonly waitFor: (match: (m: Received) => boolean, what: string, ms?: number) => Promise<Received>
  /** Offers a job; resolves with the worker's availability answer. */
  readonly offer: (jobId: string, roomName?: string) => Promise<Received>
  /** Assigns a job with a room token for `identity`. */
  readonly assign: (jobId: string, roomName?: string) => Promise<void>
  readonly terminate: (jobId: string) => void
  readonly sendRaw: (bytes: Uint8Array) => void
  /** Drops every worker connection and stops listening for `downMs`, then listens again on the same port. */
  readonly restart: (downMs: number) => Promise<void>
  /** The open connections go half-open: nothing more reaches the worker (no pong either) and
   * what it sends is ignored. New connections are served normally. */
  readonly silence: () => void
}

export interface Options {
  readonly apiKey: string
  readonly apiSecret: string
}

export const make = (options: Options): Effect.Effect<FakeServer, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.promise(() => start(options)), (s) => Effect.promise(() => s.stop()))

const start = async (options: Options) => {
  const verifier = new TokenVerifier(options.apiKey, options.apiSecret)
  const received: Array<Received> = []
  const refusedTokens: Array<string> = []
  const listeners: Array<() => void> = []
  const sockets = new Set<WebSocket>()
  const silent = new Set<WebSocket>()
  let connectionCount = 0
  let workers = 0
  let port = 0
  let http: Server
  let wss: WebSocketServer

  const send = (msg: ServerMessage["message"]) => {
    const bytes = new ServerMessage({ message: msg }).toBinary()
    for (const ws of sockets) if (ws.readyState === WebSocket.OPEN && !silent.has(ws)) ws.send(bytes)
  }

  const listen = () =>
    new Promise<void>((resolve) => {
      http = createServer((_req, res) => res.writeHead(404).end())
      // Pongs are each connection's to send: a silent (half-open) one sends none.
      wss = new WebSocketServer({ noServer: true, autoPong: false })
      http.on("upgrade", async (req, socket, head) => {
        const auth = req.headers.authorization ?? ""
        const token = auth.startsWith("Bearer ") ? auth.slice(7) : ""
        const ok = req.url?.split("?")[0] === "/agent" &&
          (await verifier.verify(token).then((claims) => claims.video?.agent === true, () => false))
        if (!ok) {
          refusedTokens.push(token)
          socket.end("HTTP/1.1 401 Unauthorized\r\n\r\n")
          return
        }
        wss.handleUpgrade(req, socket, head, (ws) => serve(ws))
      })
      http.listen(port, "127.0.0.1", () => {
        port = (http.address() as AddressInfo).port
        resolve()
      })
    })

  const serve = (ws: WebSocket) => {
    const connection = ++connectionCount
    sockets.add(ws)
    ws.on("close", () => sockets.delete(ws))
    // A worker that drops the connection (its pings found it silent) resets it: not an error here.
    ws.on("error", () => {})
    ws.on("ping", (data) => {
      if (!silent.has(ws)) ws.pong(data)
    })
    ws.on("message", (data: Buffer) => {
      if (silent.has(ws)) return
      const msg = WorkerMessage.fromBinary(new Uint8Array(data))
      if (msg.message.case === undefined) return
      received.push({ case: msg.message.case, value: msg.message.value, connection })
      for (const l of listeners.splice(0)) l()
      if (msg.message.case === "register") {
        ws.send(new ServerMessage({ message: { case: "register", value: new RegisterWorkerResponse({ workerId: `W_${++workers}` }) } }).toBinary())
      }
      if (msg.message.case === "ping") {
        const pong = new WorkerPong({ lastTimestamp: msg.message.value.timestamp, timestamp: BigInt(Date.now()) })
        ws.send(new ServerMessage({ message: { case: "pong", value: pong } }).toBinary())
      }
    })
  }

  await listen()

  const waitFor = (match: (m: Received) => boolean, what: string, ms = 10_000) =>
    new Promise<Received>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} from the worker in ${ms} ms; received: ${received.map((r) => r.case).join(", ")}`)), ms)
      const check = () => {
        const found = received.find(match)
        if (found) {
          clearTimeout(timer)
          resolve(found)
        } else listeners.push(check)
      }
      check()
    })

  const job = (jobId: string, roomName: string) => new Job({ id: jobId, type: JobType.JT_ROOM, room: new Room({ name: roomName, sid: `RM_${roomName}` }) })

  const server: FakeServer & { stop: () => Promise<void> } = {
    get url() {
      return `ws://127.0.0.1:${port}`
    },
    received,
    refusedTokens,
    connections: () => sockets.size,
    waitFor,
    offer: (jobId, roomName = `room-${jobId}`) => {
      send({ case: "availability", value: new AvailabilityRequest({ job: job(jobId, roomName) }) })
      return waitFor((m) => m.case === "availability" && m.value.jobId === jobId, `availability for ${jobId}`)
    },
    assign: async (jobId, roomName = `room-${jobId}`) => {
      const token = new AccessToken(options.apiKey, options.apiSecret, { identity: `agent-${jobId}` })
      token.addGrant({ roomJoin: true, room: roomName, agent: true })
      send({ case: "assignment", value: new JobAssignment({ job: job(jobId, roomName), token: await token.toJwt() }) })
    },
    terminate: (jobId) => send({ case: "termination", value: new JobTermination({ jobId }) }),
    sendRaw: (bytes) => {
      for (const ws of sockets) ws.send(bytes)
    },
    silence: () => {
      for (const ws of sockets) silent.add(ws)
    },
    restart: async (downMs) => {
      for (const ws of sockets) ws.terminate()
      await new Promise<void>((r) => http.close(() => r()))
      wss.close()
      await new Promise((r) => setTimeout(r, downMs))
      await listen()
    },
    stop: async () => {
      for (const ws of sockets) ws.terminate()
      wss.close()
      await new Promise<void>((r) => http.close(() => r()))
    }
  }
  return server
}
