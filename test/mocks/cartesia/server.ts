/**
 * A local stand-in for Cartesia's streaming TTS WebSocket (`/tts/websocket`) on 127.0.0.1. It
 * takes the key as Cartesia does (`X-API-Key`, `Authorization: Bearer`, or `?api_key=`; 401
 * otherwise) and the version as `Cartesia-Version` or `?cartesia_version=` (400 without), and
 * serves contexts as Cartesia streams them: every input on a `context_id` adds its transcript
 * (`continue: true` keeps the context open), audio `chunk`s (base64 PCM16 of a tone, `chunkMs`
 * each, paced by `intervalMs`, the first `firstChunkMs` after the context's first input) follow as
 * text arrives, and one `done` comes once an input with
 * `continue: false` (the default) has been spoken. `flush: true` answers `flush_done` with the
 * next `flush_id` after the audio so far. A context asked with `add_timestamps: true` gets each
 * input's words timed (`timestamps`, seconds from the context's start) before the chunk where
 * they start. Several contexts interleave on one socket; `cancel`
 * stops one. Errors have the current shape (`title`, `message`, `error_code`, `doc_url`,
 * `status_code`, `done`). Faults: an error frame, a close mid-generation, a stall, chunks that
 * keep coming after a cancel, and a chunk for a context nobody asked for. Every message sent is
 * recorded (`sent`).
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { type WebSocket, WebSocketServer } from "ws"
import { Context, type ErrorFault, errorFrame, type ServerMessage } from "./contexts.ts"

export interface CartesiaMockOptions {
  readonly apiKey?: string
  /** Audio per character of transcript. Default 30 ms. */
  readonly msPerChar?: number
  /** Audio per chunk message. Default 100 ms. */
  readonly chunkMs?: number
  /** Time between chunk messages. Default 2 ms. */
  readonly intervalMs?: number
  /** From a context's first input to its first chunk (the provider's time to first byte). Default 0. */
  readonly firstChunkMs?: number
}

export interface CartesiaMockFaults {
  /** The next generation gets an error frame instead of audio. */
  error?: ErrorFault | undefined
  /** Close the socket after this many chunks of the next generation. */
  closeAfterChunks?: { readonly chunks: number; readonly code: number; readonly reason: string } | undefined
  /** Stop sending after this many chunks of the next generation. */
  stallAfterChunks?: number | undefined
  /** Keep sending this many chunks after a cancel. */
  chunksAfterCancel?: number | undefined
  /** Send a chunk for an unknown context before each generation. */
  strayContext?: boolean | undefined
}

export interface CartesiaMock {
  readonly url: string
  /** Every client message, parsed, with the connection it came on and when (performance.now()). */
  readonly messages: Array<{ readonly connection: number; readonly message: Record<string, unknown>; readonly at: number }>
  /** Every message sent, with the connection it went on. */
  readonly sent: Array<{ readonly connection: number; readonly message: ServerMessage }>
  /** How each accepted handshake carried the key. */
  readonly auth: Array<"x-api-key" | "bearer" | "query">
  readonly faults: CartesiaMockFaults
  /** Handshakes accepted. */
  connections: number
  /** Handshakes refused (a wrong key, no version header). */
  refused: number
  /** Chunks sent for contexts after their cancel. */
  lateChunks: number
}

const tone = (ms: number, rate: number) => {
  const samples = Math.round((ms / 1000) * rate)
  const out = Buffer.alloc(samples * 2)
  for (let i = 0; i < samples; i++) out.writeInt16LE(Math.round(6000 * Math.sin((2 * Math.PI * 330 * i) / rate)), i * 2)
  return out
}

export const make = (options: CartesiaMockOptions = {}) =>
  Effect.acquireRelease(
    Effect.callback<{ mock: CartesiaMock; close: () => void }>((resume) => {
      const faults: CartesiaMockFaults = {}
      const mock: CartesiaMock = { url: "", messages: [], sent: [], auth: [], faults, connections: 0, refused: 0, lateChunks: 0 }
      const apiKey = options.apiKey ?? "ct-test"
      const http = createServer()
      const wss = new WebSocketServer({ noServer: true })
      http.on("upgrade", (req, socket, head) => {
        const query = new URL(req.url ?? "/", "http://mock").searchParams
        const auth = req.headers["x-api-key"] === apiKey
          ? "x-api-key"
          : req.headers.authorization === `Bearer ${apiKey}`
          ? "bearer"
          : query.get("api_key") === apiKey
          ? "query"
          : undefined
        const version = req.headers["cartesia-version"] ?? query.get("cartesia_version") ?? undefined
        const status = auth === undefined ? 401 : version === undefined ? 400 : undefined
        if (status !== undefined) {
          mock.refused++
          const body = JSON.stringify(
            status === 401
              ? { title: "Unauthorized", message: "Invalid API key", error_code: "invalid_api_key", status_code: 401 }
              : { title: "Bad request", message: "Cartesia-Version header is required", error_code: "missing_version", status_code: 400 }
          )
          socket.end(`HTTP/1.1 ${status} Refused\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
          return
        }
        mock.auth.push(auth!)
        wss.handleUpgrade(req, socket, head, (ws) => serve(ws, ++mock.connections))
      })

      const serve = (ws: WebSocket, connection: number) => {
        const cancelled = new Set<string>()
        const contexts = new Map<string, Context>()
        /** The faults each context was started with. */
        const faultsOf = new Map<Context, CartesiaMockFaults>()
        const requestId = randomUUID()
        const send = (message: ServerMessage) => {
          if (ws.readyState !== ws.OPEN) return
          mock.sent.push({ connection, message })
          ws.send(JSON.stringify(message))
        }
        const refuse = (contextId: string, fault: ErrorFault) => send(errorFrame(contextId, fault, requestId))
        // A client that drops the connection resets it: not an error here.
        ws.on("error", () => {})
        ws.on("message", (data) => {
          const message = JSON.parse((data as Buffer).toString("utf8")) as Record<string, unknown>
          mock.messages.push({ connection, message, at: performance.now() })
          const contextId = typeof message["context_id"] === "string" ? message["context_id"] : ""
          if (message["cancel"] === true) return void cancelled.add(contextId)
          const format = message["output_format"] as { container?: string; encoding?: string; sample_rate?: number } | undefined
          const transcript = message["transcript"]
          if (typeof message["model_id"] !== "string" || typeof transcript !== "string" || format?.encoding !== "pcm_s16le" || contextId === "") {
            return refuse(contextId, { status: 400, message: "invalid request: model_id, transcript, output_format and context_id are required" })
          }
          let context = contexts.get(contextId)
          if (context?.ended === true) return refuse(contextId, { status: 400, message: `context ${contextId} has already ended` })
          if (context !== undefined && !context.matches(message)) {
            return refuse(contextId, { status: 400, message: "inputs on one context must keep every field but transcript and continue" })
          }
          if (context === undefined) {
            if (faults.strayContext) {
              send({ type: "chunk", context_id: "stray", data: tone(20, 24000).toString("base64"), done: false, status_code: 206, step_time: 1 })
            }
            const fault = { ...faults }
            faults.error = faults.closeAfterChunks = faults.stallAfterChunks = undefined
            if (fault.error !== undefined) return refuse(contextId, fault.error)
            context = new Context(contextId, message, format.sample_rate ?? 24000)
            contexts.set(contextId, context)
            faultsOf.set(context, fault)
          }
          context.add(tone(transcript.length * (options.msPerChar ?? 30), context.rate), message["flush"] === true, message["continue"] === true, transcript)
          pump(context)
        })

        /** Sends the context's audio as it comes, its flush_dones, and its done once it ended. */
        const pump = (context: Context) => {
          if (context.pumping) return
          context.pumping = true
          const own = faultsOf.get(context) ?? {}
          const step = Math.round(((options.chunkMs ?? 100) / 1000) * context.rate) * 2
          const next = () => {
            if (ws.readyState !== ws.OPEN) return
            if (cancelled.has(context.id)) {
              if (context.afterCancel >= (own.chunksAfterCancel ?? 0)) return
              context.afterCancel++
              mock.lateChunks++
            }
            if (own.closeAfterChunks !== undefined && context.chunks >= own.closeAfterChunks.chunks) {
              return ws.close(own.closeAfterChunks.code, own.closeAfterChunks.reason)
            }
            if (own.stallAfterChunks !== undefined && context.chunks >= own.stallAfterChunks) return
            const early = context.chunks === 0 ? context.startedAt + (options.firstChunkMs ?? 0) - performance.now() : 0
            if (early > 0) return void setTimeout(next, early)
            for (const flushed of context.flushed()) send(flushed)
            if (context.at >= context.audio.length) {
              context.pumping = false
              if (context.ended && !cancelled.has(context.id)) send({ type: "done", context_id: context.id, done: true, status_code: 206 })
              return
            }
            for (const words of context.timestamped(context.at + step)) send(words)
            send({
              type: "chunk",
              context_id: context.id,
              data: context.audio.subarray(context.at, context.at + step).toString("base64"),
              done: false,
              status_code: 206,
              step_time: 1
            })
            context.at += step
            context.chunks++
            setTimeout(next, options.intervalMs ?? 2)
          }
          next()
        }
      }

      http.listen(0, "127.0.0.1", () => {
        const port = (http.address() as AddressInfo).port
        ;(mock as { url: string }).url = `ws://127.0.0.1:${port}/tts/websocket`
        resume(Effect.succeed({
          mock,
          close: () => {
            for (const ws of wss.clients) ws.terminate()
            wss.close()
            http.closeAllConnections()
            http.close()
          }
        }))
      })
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ mock }) => mock))
