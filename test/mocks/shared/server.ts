/**
 * The WebSocket server under both mocks: an HTTP server on 127.0.0.1 (port 0) whose upgrades are
 * delayed by `connectMs`, optionally refused (HTTP status) or sabotaged right after the upgrade, and
 * turned into `MockConnection`s driven by a protocol session.
 */
import { createServer, type IncomingMessage, type Server } from "node:http"
import type { Duplex } from "node:stream"
import { WebSocketServer } from "ws"
import { type ConnectInfo, MockConnection, type ProtocolSession } from "./connection.ts"
import { type Fault, type NoiseOptions, RuleList, type Trigger } from "./rules.ts"

/** What happens to a handshake, decided per attempt by `onConnect`. */
export type ConnectFault =
  /** Refuse the upgrade with an HTTP status (401, 403, 404, 429, 500...). */
  | { readonly kind: "reject"; readonly status: number; readonly body?: string }
  /** Accept, then close with a close frame before the first server event. */
  | { readonly kind: "close"; readonly code?: number; readonly reason?: string }
  /** Accept, then drop the TCP connection before the first server event. */
  | { readonly kind: "terminate" }
  /** Accept, then never send anything and ignore every client frame (half-open). */
  | { readonly kind: "silent" }

export interface CommonMockOptions<E, R, A> {
  /** Delay before the WebSocket handshake completes (default 0). */
  readonly connectMs?: number
  /** Delay before each answer; pipelined, so it does not accumulate (default 0). */
  readonly roundTripMs?: number
  /** Faults applied to every connection. */
  readonly faults?: ReadonlyArray<Fault<E, R>>
  /** Triggers shared by every connection (use counts are shared too). */
  readonly triggers?: ReadonlyArray<Trigger<E, A>>
  /** Unknown / malformed server frames interleaved with the protocol frames. */
  readonly noise?: NoiseOptions
  /** Decides the fate of each handshake attempt; `undefined` accepts normally. */
  readonly onConnect?: (info: ConnectInfo) => ConnectFault | undefined
}

export interface ServerSpec<E, R, A> {
  readonly acceptPath: (path: string) => boolean
  readonly selectProtocol?: (offered: ReadonlyArray<string>) => string | undefined
  readonly frameEncoding: "text" | "binary"
  readonly createSession: (conn: MockConnection<E, R, A>) => ProtocolSession<E, R, A>
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable"
}

const refuse = (socket: Duplex, status: number, body: string): void => {
  const text = STATUS_TEXT[status] ?? "Error"
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: close\r\n\r\n${body}`
  )
}

export class MockServer<E, R, A> {
  readonly connections: Array<MockConnection<E, R, A>> = []
  readonly globalFaults: RuleList<Fault<E, R>>
  readonly globalTriggers: RuleList<Trigger<E, A>>
  readonly internalErrors: Array<unknown> = []
  handshakeAttempts = 0
  port = 0
  private readonly options: CommonMockOptions<E, R, A>
  private readonly spec: ServerSpec<E, R, A>
  private readonly http: Server
  private readonly wss: WebSocketServer
  private readonly pending = new Set<ReturnType<typeof setTimeout>>()
  private readonly listeners = new Set<() => void>()

  constructor(options: CommonMockOptions<E, R, A>, spec: ServerSpec<E, R, A>) {
    this.options = options
    this.spec = spec
    this.globalFaults = new RuleList(options.faults ?? [])
    this.globalTriggers = new RuleList(options.triggers ?? [], 1)
    this.wss = new WebSocketServer({
      noServer: true,
      // Pongs are the connection's to send: a muted (half-open) one sends none.
      autoPong: false,
      handleProtocols: (protocols) => spec.selectProtocol?.([...protocols]) ?? false
    })
    this.http = createServer((_req, res) => {
      res.writeHead(426, { "content-type": "text/plain" })
      res.end("Upgrade Required")
    })
    this.http.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => this.onUpgrade(req, socket, head))
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.http.once("error", reject)
      this.http.listen(0, "127.0.0.1", () => {
        const address = this.http.address()
        this.port = typeof address === "object" && address !== null ? address.port : 0
        resolve()
      })
    })
  }

  stop(): Promise<void> {
    for (const t of this.pending) clearTimeout(t)
    this.pending.clear()
    for (const c of this.connections) c.terminate()
    return new Promise((resolve) => {
      this.wss.close(() => {
        this.http.closeAllConnections()
        this.http.close(() => resolve())
      })
    })
  }

  /** Subscribes to "something was recorded / a connection changed"; returns the unsubscribe. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  notify = (): void => {
    for (const l of [...this.listeners]) l()
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on("error", () => {})
    // Collapse doubled slashes first: "//ws/..." would otherwise parse as a host (js-genai's URL).
    const [rawPath = "/", ...query] = (req.url ?? "/").split("?")
    const url = new URL(rawPath.replace(/\/{2,}/g, "/") + (query.length > 0 ? `?${query.join("?")}` : ""), "http://127.0.0.1")
    const path = url.pathname
    const protocolsHeader = req.headers["sec-websocket-protocol"]
    const info: ConnectInfo = {
      attempt: this.handshakeAttempts++,
      path,
      url,
      headers: req.headers,
      protocols: typeof protocolsHeader === "string" ? protocolsHeader.split(",").map((s) => s.trim()) : []
    }
    this.notify()
    if (!this.spec.acceptPath(path)) {
      return refuse(socket, 404, JSON.stringify({ error: { message: `Not found: ${path}`, code: 404 } }))
    }
    const fault = this.options.onConnect?.(info)
    if (fault?.kind === "reject") {
      return refuse(socket, fault.status, fault.body ?? JSON.stringify({ error: { code: fault.status } }))
    }
    const complete = () => {
      if (socket.destroyed) return
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        const conn = new MockConnection<E, R, A>(ws, this.connections.length, info, {
          roundTripMs: this.options.roundTripMs ?? 0,
          frameEncoding: this.spec.frameEncoding,
          noise: this.options.noise ?? {},
          globalFaults: this.globalFaults,
          globalTriggers: this.globalTriggers,
          notify: this.notify,
          onInternalError: (error) => {
            this.internalErrors.push(error)
            console.error("[mock server] internal error", error)
          }
        })
        conn.attach(this.spec.createSession(conn))
        this.connections.push(conn)
        this.notify()
        if (fault?.kind === "close") return conn.close(fault.code ?? 1011, fault.reason ?? "")
        if (fault?.kind === "terminate") return conn.terminate()
        if (fault?.kind === "silent") {
          conn.muted = true
          return
        }
        conn.guard(() => conn.protocol.onOpen())
      })
    }
    const delay = this.options.connectMs ?? 0
    if (delay <= 0) return complete()
    const t = setTimeout(() => {
      this.pending.delete(t)
      complete()
    }, delay)
    this.pending.add(t)
  }
}
