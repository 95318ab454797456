/**
 * A local stand-in for Cartesia's streaming TTS WebSocket (`/tts/websocket`) on 127.0.0.1. It
 * checks the `X-API-Key` and `Cartesia-Version` headers at the handshake (401 / 400), validates
 * each generation request, and answers `chunk` messages (base64 PCM16 of a tone, `chunkMs` each,
 * paced by `intervalMs`) then `done`, per `context_id`, several contexts interleaved on one socket.
 * `cancel` stops a context. Faults: an error frame (older API shape: `error` string and
 * `status_code`), a close mid-generation, a stall, chunks that keep coming after a cancel, and a
 * chunk for a context nobody asked for.
 */
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { type WebSocket, WebSocketServer } from "ws"

export interface CartesiaMockOptions {
  readonly apiKey?: string
  /** Audio per character of transcript. Default 30 ms. */
  readonly msPerChar?: number
  /** Audio per chunk message. Default 100 ms. */
  readonly chunkMs?: number
  /** Time between chunk messages. Default 2 ms. */
  readonly intervalMs?: number
}

export interface CartesiaMockFaults {
  /** The next generation gets an error frame instead of audio. */
  error?: { readonly status: number; readonly message: string } | undefined
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
  /** Every client message, parsed, with the connection it came on. */
  readonly messages: Array<{ readonly connection: number; readonly message: Record<string, unknown> }>
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
      const mock: CartesiaMock = { url: "", messages: [], faults, connections: 0, refused: 0, lateChunks: 0 }
      const apiKey = options.apiKey ?? "ct-test"
      const http = createServer()
      const wss = new WebSocketServer({ noServer: true })
      http.on("upgrade", (req, socket, head) => {
        const status = req.headers["x-api-key"] !== apiKey ? 401 : req.headers["cartesia-version"] === undefined ? 400 : undefined
        if (status !== undefined) {
          mock.refused++
          const body = JSON.stringify({ error: status === 401 ? "Invalid API key" : "Cartesia-Version header is required" })
          socket.end(`HTTP/1.1 ${status} Refused\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
          return
        }
        wss.handleUpgrade(req, socket, head, (ws) => serve(ws, ++mock.connections))
      })

      const serve = (ws: WebSocket, connection: number) => {
        const cancelled = new Set<string>()
        const send = (m: Record<string, unknown>) => ws.readyState === ws.OPEN && ws.send(JSON.stringify(m))
        // A client that drops the connection resets it: not an error here.
        ws.on("error", () => {})
        ws.on("message", (data) => {
          const message = JSON.parse((data as Buffer).toString("utf8")) as Record<string, unknown>
          mock.messages.push({ connection, message })
          const contextId = message["context_id"] as string
          if (message["cancel"] === true) return void cancelled.add(contextId)
          const format = message["output_format"] as { container?: string; encoding?: string; sample_rate?: number } | undefined
          const transcript = message["transcript"]
          if (typeof message["model_id"] !== "string" || typeof transcript !== "string" || format?.encoding !== "pcm_s16le") {
            return void send({ type: "error", error: "invalid request", status_code: 400, done: true, context_id: contextId })
          }
          if (faults.strayContext) send({ type: "chunk", data: tone(20, 24000).toString("base64"), done: false, status_code: 206, context_id: "stray" })
          const fault = { ...faults }
          faults.error = faults.closeAfterChunks = faults.stallAfterChunks = undefined
          if (fault.error !== undefined) {
            return void send({ type: "error", error: fault.error.message, status_code: fault.error.status, done: true, context_id: contextId })
          }
          const rate = format.sample_rate ?? 24000
          const audio = tone(transcript.length * (options.msPerChar ?? 30), rate)
          const step = Math.round(((options.chunkMs ?? 100) / 1000) * rate) * 2
          let at = 0
          let sent = 0
          let afterCancel = 0
          const next = () => {
            if (ws.readyState !== ws.OPEN) return
            if (cancelled.has(contextId)) {
              if (afterCancel >= (fault.chunksAfterCancel ?? 0)) return
              afterCancel++
              mock.lateChunks++
            }
            if (fault.closeAfterChunks !== undefined && sent >= fault.closeAfterChunks.chunks) {
              return ws.close(fault.closeAfterChunks.code, fault.closeAfterChunks.reason)
            }
            if (fault.stallAfterChunks !== undefined && sent >= fault.stallAfterChunks) return
            if (at >= audio.length) return void send({ type: "done", done: true, status_code: 206, context_id: contextId })
            send({ type: "chunk", data: audio.subarray(at, at + step).toString("base64"), done: false, status_code: 206, step_time: 1, context_id: contextId })
            at += step
            sent++
            setTimeout(next, options.intervalMs ?? 2)
          }
          next()
        })
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
