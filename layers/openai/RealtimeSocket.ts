/**
 * The WebSocket under the realtime providers (OpenAI Realtime, Gemini Live): the `ws` client
 * wrapped in a Scope.
 *
 * Why `ws` and not `effect/socket`: the OpenAI handshake needs an `Authorization` header, which
 * Node's built-in WebSocket (what `NodeSocket.layerWebSocketConstructor` uses) cannot send, and a
 * refused handshake should report its HTTP status (`unexpected-response`). Everything here is a
 * thin adapter: inbound frames go, in order, into a `Queue` that a reader fiber drains; the close
 * is the last element; writes are synchronous (`ws.send` only enqueues), so a caller can write
 * several frames and register their acknowledgements atomically.
 *
 * A connection that dies without a close (a NAT that forgot it, a phone that changed networks)
 * would leave a reply waiting on it for ever: the socket pings the server and drops a
 * connection that stopped answering (`../shared/Liveness.ts`).
 *
 * Never put a secret in an error message: URLs are printed without their query string.
 */
import { Cause, Duration, Effect, Queue, type Scope } from "effect"
import { WebSocket } from "ws"
import { RealtimeError } from "../../services/RealtimeModel.ts"
import { defaultLiveness, type Liveness, watch } from "../shared/Liveness.ts"

/** One inbound frame, or the close (always last). */
export type Frame =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Binary"; readonly bytes: Uint8Array }
  | { readonly _tag: "Close"; readonly code: number; readonly reason: string }

export interface SocketOptions {
  readonly url: string
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly protocols?: ReadonlyArray<string> | undefined
  /** Time allowed for the handshake. */
  readonly openTimeout: Duration.Input
  /** Liveness pings (default: every 10 s, the server given 10 s to answer). */
  readonly liveness?: Liveness | undefined
}

export { defaultLiveness, type Liveness } from "../shared/Liveness.ts"

export interface RealtimeSocket {
  /** Process-unique number, for logs. */
  readonly id: number
  /** Inbound frames in arrival order; the `Close` frame is last, then the queue ends. */
  readonly frames: Queue.Dequeue<Frame, Cause.Done>
  /** Writes one text frame; `false` when the socket is not open (nothing written). */
  readonly sendUnsafe: (text: string) => boolean
  readonly isOpen: () => boolean
}

/** `scheme://host/path` of a URL, without its query (where API keys travel). */
export const printableUrl = (url: string): string => {
  if (!URL.canParse(url)) return "<invalid url>"
  const u = new URL(url)
  return `${u.protocol}//${u.host}${u.pathname}`
}

let counter = 0

const connectError = (message: string) => new RealtimeError({ reason: "connect", message })

/**
 * Opens a WebSocket; it is closed (code 1000) when the Scope closes. Fails with reason `connect`
 * when the handshake is refused, the socket errors or closes before opening, or `openTimeout`
 * passes.
 */
export const openSocket = (options: SocketOptions): Effect.Effect<RealtimeSocket, RealtimeError, Scope.Scope> => {
  const where = printableUrl(options.url)
  const acquire = Effect.gen(function*() {
    if (!URL.canParse(options.url)) return yield* connectError(`not a valid URL: ${where}`)
    const frames = yield* Queue.unbounded<Frame, Cause.Done>()
    const ws = yield* Effect.callback<WebSocket, RealtimeError>((resume) => {
      const ws = new WebSocket(options.url, options.protocols === undefined ? [] : [...options.protocols], {
        headers: { ...options.headers }
      })
      let opened = false
      ws.on("unexpected-response", (_req, res) => {
        const status = res.statusCode ?? 0
        res.resume()
        ws.terminate()
        resume(Effect.fail(connectError(`${where}: handshake refused with HTTP ${status} ${res.statusMessage ?? ""}`.trim())))
      })
      ws.on("open", () => {
        opened = true
        resume(Effect.succeed(ws))
      })
      ws.on("error", (error) => {
        if (!opened) resume(Effect.fail(connectError(`${where}: ${error.message}`)))
      })
      ws.on("message", (data, isBinary) => {
        const buf = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)
        Queue.offerUnsafe(
          frames,
          isBinary ? { _tag: "Binary", bytes: new Uint8Array(buf) } : { _tag: "Text", text: buf.toString("utf8") }
        )
      })
      ws.on("close", (code, reason) => {
        if (!opened) resume(Effect.fail(connectError(`${where}: closed before opening (${code})`)))
        Queue.offerUnsafe(frames, { _tag: "Close", code, reason: reason.toString("utf8") })
        Queue.endUnsafe(frames)
      })
      return Effect.sync(() => ws.terminate())
    }).pipe(
      Effect.timeoutOrElse({
        duration: options.openTimeout,
        orElse: () =>
          Effect.fail(connectError(`${where}: no handshake within ${Duration.format(Duration.fromInputUnsafe(options.openTimeout))}`))
      })
    )
    watch(ws, options.liveness ?? defaultLiveness)
    const socket: RealtimeSocket = {
      id: ++counter,
      frames,
      sendUnsafe: (text) => {
        if (ws.readyState !== WebSocket.OPEN) return false
        ws.send(text)
        return true
      },
      isOpen: () => ws.readyState === WebSocket.OPEN
    }
    return { ws, socket }
  })
  return Effect.acquireRelease(acquire, ({ ws }) =>
    Effect.callback<void>((resume) => {
      if (ws.readyState === WebSocket.CLOSED) return resume(Effect.void)
      const timer = setTimeout(() => ws.terminate(), 1_000)
      ws.once("close", () => {
        clearTimeout(timer)
        resume(Effect.void)
      })
      if (ws.readyState === WebSocket.OPEN) ws.close(1000, "")
      else if (ws.readyState === WebSocket.CONNECTING) ws.terminate()
    })).pipe(Effect.map(({ socket }) => socket))
}
