/**
 * A LiveKit server's agent dispatch, faithful to its protocol and nothing more: a WebSocket on
 * `/agent` (127.0.0.1) that checks the worker's token with livekit-server-sdk's `TokenVerifier`
 * (the `agent` grant), answers `register` and `ping`, and lets a test offer jobs
 * (`AvailabilityRequest`), assign them (`JobAssignment` with a room token), terminate them, send
 * malformed frames, and restart (drop every connection and listen again on the same port).
 * Every message a worker sends is recorded, decoded.
 *
 * As LiveKit does: `RegisterWorkerResponse` carries the server's `serverInfo`; a job carries the
 * agent name it was dispatched to and its dispatch id; a job is offered to one worker registered
 * under that agent name (none registered: the offer waits, and `offer` says so when it times
 * out); `JobAssignment` carries the URL the worker joins the room at.
 */
import {
  AvailabilityRequest,
  Job,
  JobAssignment,
  JobTermination,
  JobType,
  RegisterWorkerResponse,
  Room,
  ServerInfo,
  ServerInfo_Edition,
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
  /**
   * Offers a job to one worker registered under `agentName` (default: the name the first worker
   * registered with); resolves with its availability answer.
   */
  readonly offer: (jobId: string, roomName?: string, agentName?: string) => Promise<Received>
  /** Assigns a job (to the worker it was offered to) with a room token and the room's URL. */
  readonly assign: (jobId: string, roomName?: string, agentName?: string) => Promise<void>
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
  /** `JobAssignment.url` (default: this server's own URL). */
  readonly roomUrl?: string
}

/** What this fake says it is (`RegisterWorkerResponse.serverInfo`). */
export const SERVER_INFO = { edition: ServerInfo_Edition.Standard, version: "1.9.0", protocol: 16, agentProtocol: 1, nodeId: "ND_fake" } as const

export const make = (options: Options): Effect.Effect<FakeServer, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.promise(() => start(options)), (s) => Effect.promise(() => s.stop()))

const start = async (options: Options) => {
  const verifier = new TokenVerifier(options.apiKey, options.apiSecret)
  const received: Array<Received> = []
  const refusedTokens: Array<string> = []
  const listeners: Array<() => void> = []
  const sockets = new Set<WebSocket>()
  const silent = new Set<WebSocket>()
  /** The agent name each registered connection gave, in the order they registered. */
  const registered = new Map<WebSocket, string>()
  /** The worker each job was offered to (its assignment goes there). */
  const offeredTo = new Map<string, WebSocket>()
  const waiting: Array<() => void> = []
  let nextWorker = 0
  let connectionCount = 0
  let workers = 0
  let port = 0
  let http: Server
  let wss: WebSocketServer

  const send = (msg: ServerMessage["message"]) => {
    const bytes = new ServerMessage({ message: msg }).toBinary()
    for (const ws of sockets) sendTo(ws, bytes)
  }
  const sendTo = (ws: WebSocket, bytes: Uint8Array) => {
    if (ws.readyState === WebSocket.OPEN && !silent.has(ws)) ws.send(bytes)
  }
  /** The next worker (round robin) registered under `agentName`, once there is one. */
  const workerFor = (agentName: string): Promise<WebSocket> =>
    new Promise((resolve) => {
      const pick = () => {
        const candidates = [...registered].filter(([ws, name]) => name === agentName && ws.readyState === WebSocket.OPEN && !silent.has(ws))
        if (candidates.length === 0) return void waiting.push(pick)
        resolve(candidates[nextWorker++ % candidates.length]![0])
      }
      pick()
    })

  const listen = () =>
    new Promise<void>((resolve) => {
      http = createServer((_req, res) => res.writeHead(404).end())
      // Pongs are each connection's to send: a silent (half-open) one sends none.
      wss = new WebSocketServer({ noServer: true, autoPong: false })
      http.on("upgrade", async (req, socket, head) => {
        // A raw upgrade socket has no error listener: a worker that resets it (after its 401, or
        // while the token is checked) would be an uncaught ECONNRESET in the test process.
        socket.on("error", () => {})
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
    ws.on("close", () => {
      sockets.delete(ws)
      registered.delete(ws)
    })
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
        registered.set(ws, msg.message.value.agentName)
        const answer = new RegisterWorkerResponse({ workerId: `W_${++workers}`, serverInfo: new ServerInfo(SERVER_INFO) })
        ws.send(new ServerMessage({ message: { case: "register", value: answer } }).toBinary())
        for (const w of waiting.splice(0)) w()
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

  const job = (jobId: string, roomName: string, agentName: string) =>
    new Job({ id: jobId, dispatchId: `AD_${jobId}`, agentName, type: JobType.JT_ROOM, room: new Room({ name: roomName, sid: `RM_${roomName}` }) })
  const defaultAgent = () => registered.values().next().value ?? ""

  const server: FakeServer & { stop: () => Promise<void> } = {
    get url() {
      return `ws://127.0.0.1:${port}`
    },
    received,
    refusedTokens,
    connections: () => sockets.size,
    waitFor,
    offer: (jobId, roomName = `room-${jobId}`, agentName = defaultAgent()) => {
      void workerFor(agentName).then((ws) => {
        offeredTo.set(jobId, ws)
        const request = new AvailabilityRequest({ job: job(jobId, roomName, agentName) })
        sendTo(ws, new ServerMessage({ message: { case: "availability", value: request } }).toBinary())
      })
      return waitFor(
        (m) => m.case === "availability" && m.value.jobId === jobId,
        `availability for ${jobId} (a worker registered as agent ${JSON.stringify(agentName)})`
      )
    },
    assign: async (jobId, roomName = `room-${jobId}`, agentName = defaultAgent()) => {
      const token = new AccessToken(options.apiKey, options.apiSecret, { identity: `agent-${jobId}` })
      token.addGrant({ roomJoin: true, room: roomName, agent: true })
      const assignment = new JobAssignment({
        job: job(jobId, roomName, agentName),
        url: options.roomUrl ?? server.url,
        token: await token.toJwt()
      })
      const message = new ServerMessage({ message: { case: "assignment", value: assignment } })
      const to = offeredTo.get(jobId)
      // A job never offered goes to every worker (a misbehaving server, as some tests want).
      if (to === undefined) send(message.message)
      else sendTo(to, message.toBinary())
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
