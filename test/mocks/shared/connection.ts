/**
 * One mock WebSocket connection: records every frame in both directions, runs the inbound pipeline
 * (round-trip delay, faults, protocol handler, triggers), sends server frames (with optional noise),
 * and owns the timers that must die with the socket.
 */
import type { IncomingHttpHeaders } from "node:http"
import { type RawData, WebSocket } from "ws"
import {
  type Fault,
  frameMatches,
  type MalformedKind,
  matches,
  type NoiseOptions,
  type RecordedFrame,
  RuleList,
  type Trigger
} from "./rules.ts"
import { sleep, sleepUntil } from "./timing.ts"

export interface ConnectInfo {
  /** Handshake attempt number on this server, from 0 (rejected handshakes count too). */
  readonly attempt: number
  readonly path: string
  readonly url: URL
  readonly headers: IncomingHttpHeaders
  /** Subprotocols offered by the client. */
  readonly protocols: ReadonlyArray<string>
}

export interface CloseInfo {
  readonly code: number
  readonly reason: string
  /** Who started the close (`"server"` for `close`/`terminate` and faults). */
  readonly by: "server" | "client"
  readonly atMs: number
}

export type ParseResult<E> =
  | { readonly ok: true; readonly event: E; readonly type: string }
  | { readonly ok: false; readonly reason: string; readonly type?: string }

/** The protocol half of a connection (OpenAI Realtime or Gemini Live). */
export interface ProtocolSession<E, R, A> {
  parse(text: string, binary: boolean): ParseResult<E>
  onInvalid(frame: RecordedFrame, reason: string): void
  onOpen(): void
  handle(event: E, type: string): void
  reject(event: E, type: string, payload: R): void
  perform(action: A): void
  onClose(): void
  /** Type of a server message, for the record and `onSent` triggers. */
  serverType(message: object): string | undefined
  /** Last touch before a server message is serialized (OpenAI adds `event_id`). */
  prepareOutgoing(message: object): object
  noiseFrame(kind: "unknown" | MalformedKind): { readonly data: string | Uint8Array; readonly binary: boolean }
}

export interface ConnectionSettings<E, R, A> {
  readonly roundTripMs: number
  readonly frameEncoding: "text" | "binary"
  readonly noise: NoiseOptions
  readonly globalFaults: RuleList<Fault<E, R>>
  readonly globalTriggers: RuleList<Trigger<E, A>>
  readonly notify: () => void
  readonly onInternalError: (error: unknown) => void
}

/** Close codes a server may put in a close frame (RFC 6455 7.4). */
const sendableCode = (code: number): boolean =>
  (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999)

/** RFC 6455 limits the close reason to 123 bytes; the mock truncates like a real server must. */
export const truncateReason = (reason: string): string => {
  const buf = Buffer.from(reason, "utf8")
  if (buf.byteLength <= 123) return reason
  let s = buf.subarray(0, 123).toString("utf8")
  while (Buffer.byteLength(s, "utf8") > 123 || s.endsWith("\uFFFD")) s = s.slice(0, -1)
  return s
}

const rawToBuffer = (data: RawData): Buffer =>
  Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)

export class MockConnection<E, R, A> {
  readonly index: number
  readonly info: ConnectInfo
  readonly openedAt = performance.now()
  readonly received: Array<RecordedFrame> = []
  readonly sent: Array<RecordedFrame> = []
  readonly faults = new RuleList<Fault<E, R>>()
  readonly triggers = new RuleList<Trigger<E, A>>([], 1)
  closeInfo: CloseInfo | undefined
  /** When set, inbound frames are recorded but never processed (a half-open server). */
  muted = false
  /** Liveness pings the client sent (answered with a pong unless muted). */
  pings = 0
  private session: ProtocolSession<E, R, A> | undefined
  private readonly ws: WebSocket
  private readonly settings: ConnectionSettings<E, R, A>
  private chain: Promise<void> = Promise.resolve()
  private readonly timers = new Set<ReturnType<typeof setTimeout>>()
  private closingBy: "server" | undefined
  private protocolFrames = 0

  constructor(ws: WebSocket, index: number, info: ConnectInfo, settings: ConnectionSettings<E, R, A>) {
    this.ws = ws
    this.index = index
    this.info = info
    this.settings = settings
  }

  attach(session: ProtocolSession<E, R, A>): void {
    this.session = session
    this.ws.on("message", (data, isBinary) => this.onMessage(rawToBuffer(data), isBinary))
    this.ws.on("ping", (data) => {
      this.pings++
      if (!this.muted) this.ws.pong(data)
    })
    this.ws.on("close", (code, reason) => this.onSocketClose(code, reason.toString("utf8")))
    this.ws.on("error", () => {})
  }

  get protocol(): ProtocolSession<E, R, A> {
    if (this.session === undefined) throw new Error("connection has no protocol session")
    return this.session
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN && this.closingBy === undefined
  }

  /** Negotiated subprotocol ("" if none). */
  get selectedProtocol(): string {
    return this.ws.protocol
  }

  now(): number {
    return performance.now() - this.openedAt
  }

  // --- outbound ------------------------------------------------------------------------------

  /** Sends one protocol message. Returns `false` if the socket is no longer open. */
  send(message: object): boolean {
    if (!this.isOpen) return false
    // Half-open: what the server writes never reaches the client.
    if (this.muted) return true
    const prepared = this.protocol.prepareOutgoing(message)
    const text = JSON.stringify(prepared)
    const binary = this.settings.frameEncoding === "binary"
    this.ws.send(binary ? Buffer.from(text, "utf8") : text)
    const frame = this.record("out", text, binary, prepared, this.protocol.serverType(prepared), false)
    this.protocolFrames++
    this.injectNoise()
    this.fireTriggers((t) => t.onSent !== undefined && frameMatches(t.onSent, frame))
    return true
  }

  /** Sends a frame verbatim (no `event_id`, no noise accounting). */
  sendRaw(data: string | Uint8Array, binary = typeof data !== "string", noise = false): boolean {
    if (!this.isOpen) return false
    if (this.muted) return true
    const buf = typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data)
    this.ws.send(binary ? buf : buf.toString("utf8"), { binary })
    let json: unknown = undefined
    try {
      json = JSON.parse(buf.toString("utf8"))
    } catch {
      json = undefined
    }
    const type = typeof json === "object" && json !== null ? this.protocol.serverType(json) : undefined
    this.record("out", buf.toString("utf8"), binary, json, type, noise)
    return true
  }

  sendNoise(kind: "unknown" | MalformedKind): void {
    const { binary, data } = this.protocol.noiseFrame(kind)
    this.sendRaw(data, binary, true)
  }

  private injectNoise(): void {
    const { malformedEvery, malformedKind, unknownEvery } = this.settings.noise
    if (unknownEvery !== undefined && unknownEvery > 0 && this.protocolFrames % unknownEvery === 0) {
      this.sendNoise("unknown")
    }
    if (malformedEvery !== undefined && malformedEvery > 0 && this.protocolFrames % malformedEvery === 0) {
      this.sendNoise(malformedKind ?? "invalid-json")
    }
  }

  /** Closes with a close frame (invalid codes such as 1006 become a TCP drop). */
  close(code = 1000, reason = ""): void {
    if (!this.isOpen) return
    if (!sendableCode(code)) return this.terminate()
    this.closingBy = "server"
    this.ws.close(code, truncateReason(reason))
  }

  /** Drops the TCP connection without a close frame (the client sees 1006). */
  terminate(): void {
    if (this.ws.readyState === WebSocket.CLOSED) return
    this.closingBy = "server"
    this.ws.terminate()
  }

  // --- timers --------------------------------------------------------------------------------

  /** Runs `fn` after `ms` unless the socket closed meanwhile. */
  later(ms: number, fn: () => void): void {
    if (!this.isOpen) return
    const t = setTimeout(() => {
      this.timers.delete(t)
      if (this.isOpen) this.guard(fn)
    }, ms)
    this.timers.add(t)
  }

  /** Live-clock pause for protocol tasks; they must re-check `isOpen` afterwards. */
  pause(ms: number): Promise<void> {
    return sleep(ms)
  }

  /** Runs `fn`, reporting exceptions as internal errors of the mock. */
  guard(fn: () => void): void {
    try {
      fn()
    } catch (error) {
      this.settings.onInternalError(error)
    }
  }

  // --- inbound -------------------------------------------------------------------------------

  private onMessage(buf: Buffer, binary: boolean): void {
    const text = buf.toString("utf8")
    const parsed = this.protocol.parse(text, binary)
    let json: unknown = undefined
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    const frame = this.record("in", text, binary, json, parsed.type, false, buf.byteLength)
    if (this.muted) return
    const arrival = performance.now()
    const rtt = this.settings.roundTripMs
    this.chain = this.chain
      .then(async () => {
        if (rtt > 0) await sleepUntil(arrival + rtt)
        if (!this.isOpen) return
        if (!parsed.ok) return this.protocol.onInvalid(frame, parsed.reason)
        await this.dispatch(parsed.event, parsed.type)
      })
      .catch((error) => this.settings.onInternalError(error))
  }

  private async dispatch(event: E, type: string): Promise<void> {
    const pick = (f: Fault<E, R>) => matches(f.match, event, type)
    const fault = this.faults.takeFirst(pick) ?? this.settings.globalFaults.takeFirst(pick)
    if (fault === undefined) return this.apply(event, type)
    switch (fault.kind) {
      case "dropAck":
        return
      case "reject":
        this.protocol.reject(event, type, fault.with)
        return this.fireClientTriggers(event, type)
      case "closeOn":
        return fault.abrupt ? this.terminate() : this.close(fault.code ?? 1011, fault.reason ?? "")
      case "delayAck":
        if (fault.ordered) {
          await sleep(fault.delayMs)
          return this.apply(event, type)
        }
        return this.later(fault.delayMs, () => this.apply(event, type))
    }
  }

  private apply(event: E, type: string): void {
    if (!this.isOpen) return
    this.guard(() => this.protocol.handle(event, type))
    this.fireClientTriggers(event, type)
  }

  private fireClientTriggers(event: E, type: string): void {
    this.fireTriggers((t) => t.on !== undefined && matches(t.on, event, type))
  }

  private fireTriggers(pred: (t: Trigger<E, A>) => boolean): void {
    const fired = [...this.triggers.takeAll(pred), ...this.settings.globalTriggers.takeAll(pred)]
    for (const trigger of fired) {
      const actions: ReadonlyArray<A> = Array.isArray(trigger.action)
        ? trigger.action
        : [trigger.action as A]
      const run = () => {
        for (const a of actions) this.guard(() => this.protocol.perform(a))
      }
      if (trigger.delayMs === undefined) run()
      else this.later(trigger.delayMs, run)
    }
  }

  private onSocketClose(code: number, reason: string): void {
    this.closeInfo = { code, reason, by: this.closingBy ?? "client", atMs: this.now() }
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
    this.guard(() => this.session?.onClose())
    this.settings.notify()
  }

  // --- record --------------------------------------------------------------------------------

  private record(
    direction: "in" | "out",
    text: string,
    binary: boolean,
    json: unknown,
    type: string | undefined,
    noise: boolean,
    bytes = Buffer.byteLength(text, "utf8")
  ): RecordedFrame {
    const list = direction === "in" ? this.received : this.sent
    const frame: RecordedFrame = { seq: list.length, direction, atMs: this.now(), binary, bytes, text, json, type, noise }
    list.push(frame)
    this.settings.notify()
    return frame
  }
}
