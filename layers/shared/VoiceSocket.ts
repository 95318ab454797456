/**
 * The WebSocket under the streaming voice providers (Deepgram STT, Cartesia TTS): the `ws`
 * client in a Scope, with its failures already as `VoiceError`s. `ws` rather than Node's
 * WebSocket because both providers authenticate with headers, and a refused handshake should
 * report its HTTP status. Inbound frames go in order into a queue whose last element is the close.
 * URLs are printed without their query string (where keys may travel).
 */
import { type Cause, Duration, Effect, Queue, type Scope } from "effect"
import { WebSocket } from "ws"
import { VoiceError } from "../../services/VoiceError.ts"
import { defaultLiveness, type Liveness, watch } from "./Liveness.ts"

export type Frame =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Binary"; readonly bytes: Uint8Array }
  | { readonly _tag: "Close"; readonly code: number; readonly reason: string }

export interface VoiceSocket {
  readonly frames: Queue.Dequeue<Frame, Cause.Done>
  /** Writes one frame; `false` when the socket is not open (nothing written). */
  readonly send: (data: string | Uint8Array) => boolean
  readonly isOpen: () => boolean
}

export interface OpenOptions {
  readonly source: VoiceError["source"]
  /** For messages: "Deepgram", "Cartesia". */
  readonly provider: string
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly openTimeout?: Duration.Input | undefined
  /** Liveness pings (`Liveness.ts`; default every 10 s, 10 s to answer). */
  readonly liveness?: Liveness | undefined
}

export const printableUrl = (url: string): string => {
  if (!URL.canParse(url)) return "<invalid url>"
  const u = new URL(url)
  return `${u.protocol}//${u.host}${u.pathname}`
}

const handshakeError = (options: OpenOptions, status: number, body: string) =>
  new VoiceError({
    source: options.source,
    reason: status === 429 || status >= 500 ? "ProviderError" : "InvalidRequest",
    status,
    description: `${options.provider} refused the connection to ${printableUrl(options.url)} with ${status}${
      status === 401 || status === 403 ? " (check the API key)" : ""
    }${body === "" ? "" : `: ${body.slice(0, 200)}`}`
  })

/** Opens the socket; closed with 1000 when the Scope closes. */
export const open = (options: OpenOptions): Effect.Effect<VoiceSocket, VoiceError, Scope.Scope> =>
  Effect.gen(function*() {
    const frames = yield* Queue.unbounded<Frame, Cause.Done>()
    const timeout = options.openTimeout ?? Duration.seconds(10)
    const ws = yield* Effect.acquireRelease(
      Effect.callback<WebSocket, VoiceError>((resume) => {
        const ws = new WebSocket(options.url, { headers: { ...options.headers } })
        ws.binaryType = "nodebuffer"
        ws.once("open", () => resume(Effect.succeed(ws)))
        // With this listener ws leaves the refused request to us: read its body, then destroy it.
        ws.once("unexpected-response", (req, res) => {
          let body = ""
          res.setEncoding("utf8")
          res.on("data", (s: string) => {
            body += s
          })
          res.on("end", () => {
            req.destroy()
            resume(Effect.fail(handshakeError(options, res.statusCode ?? 0, body)))
          })
        })
        ws.on("error", (e) =>
          resume(Effect.fail(new VoiceError({
            source: options.source,
            reason: "Transport",
            description: `cannot connect to ${options.provider} at ${printableUrl(options.url)}: ${e.message}`
          }))))
        ws.on("message", (data, isBinary) => {
          const buffer = data as Buffer
          Queue.offerUnsafe(
            frames,
            isBinary
              ? { _tag: "Binary", bytes: new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength) }
              : { _tag: "Text", text: buffer.toString("utf8") }
          )
        })
        ws.on("close", (code, reason) => {
          Queue.offerUnsafe(frames, { _tag: "Close", code, reason: reason.toString("utf8") })
          Queue.endUnsafe(frames)
        })
        return Effect.sync(() => ws.terminate())
      }).pipe(
        Effect.timeoutOrElse({
          duration: timeout,
          orElse: () =>
            Effect.fail(new VoiceError({
              source: options.source,
              reason: "Timeout",
              description: `${options.provider} did not accept the connection in ${Duration.toMillis(timeout)} ms`
            }))
        })
      ),
      (ws) =>
        Effect.callback<void>((resume) => {
          if (ws.readyState === WebSocket.CLOSED) return resume(Effect.void)
          const timer = setTimeout(() => ws.terminate(), 1000)
          ws.once("close", () => {
            clearTimeout(timer)
            resume(Effect.void)
          })
          if (ws.readyState === WebSocket.OPEN) ws.close(1000)
        })
    )
    // A connection that went silent without a close is dropped, so the stream using it fails
    // (and is replaced) instead of waiting for ever.
    watch(ws, options.liveness ?? defaultLiveness)
    return {
      frames,
      isOpen: () => ws.readyState === WebSocket.OPEN,
      send: (data) => {
        if (ws.readyState !== WebSocket.OPEN) return false
        ws.send(data)
        return true
      }
    }
  })
