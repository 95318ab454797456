/**
 * A local stand-in for Deepgram's live transcription (`/v1/listen` over WebSocket) on 127.0.0.1.
 * It checks `Authorization: Token <key>` at the handshake (401 otherwise), takes binary PCM16
 * audio, answers `SpeechStarted` on the first audio, interim `Results` (`is_final: false`) that
 * reveal a scripted transcript word by word as audio arrives, a final `Results` with
 * `from_finalize: true` on `Finalize`, and `Metadata` then close 1000 on `CloseStream`. Idle for
 * `inactivityMs` it closes with 1011 NET-0001, as Deepgram does after 10 s. Faults: refuse the
 * handshake, close with a code and reason after N audio bytes, ignore `Finalize`.
 */
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { WebSocketServer } from "ws"

export interface DeepgramMockOptions {
  readonly apiKey?: string
  /** One transcript per utterance (the last repeats). */
  readonly transcripts?: ReadonlyArray<string>
  /** Audio per revealed word. Default 200 ms. */
  readonly msPerWord?: number
  /** Default 10 000 ms, as Deepgram. */
  readonly inactivityMs?: number
}

export interface DeepgramMockFaults {
  /** Refuse handshakes with this status. */
  rejectStatus?: number | undefined
  /** After this many audio bytes on a connection, close with `code` and `reason`. */
  closeAfterBytes?: { readonly bytes: number; readonly code: number; readonly reason: string } | undefined
  /** Never answer Finalize. */
  ignoreFinalize?: boolean | undefined
  /** Answer Finalize this late (ms). */
  finalizeDelayMs?: number | undefined
  /** After this many audio bytes on a connection, go silent without closing (half-open): send
   * nothing more, answer no ping, ignore what comes, never close for inactivity. */
  silentAfterBytes?: number | undefined
}

export interface ConnectionRecord {
  readonly query: URLSearchParams
  readonly authorization: string | undefined
  audioBytes: number
  readonly control: Array<string>
  /** Liveness pings the client sent. */
  pings: number
  closedByServer?: { readonly code: number; readonly reason: string }
}

export interface DeepgramMock {
  readonly url: string
  readonly connections: Array<ConnectionRecord>
  /** Handshakes refused (a wrong key, `rejectStatus`). */
  readonly refused: () => number
  readonly faults: DeepgramMockFaults
}

const results = (transcript: string, isFinal: boolean, fromFinalize: boolean, start: number, duration: number) =>
  JSON.stringify({
    type: "Results",
    channel_index: [0, 1],
    duration,
    start,
    is_final: isFinal,
    speech_final: isFinal,
    ...(fromFinalize ? { from_finalize: true } : {}),
    channel: {
      alternatives: [{
        transcript,
        confidence: 0.98,
        words: transcript === "" ? [] : transcript.split(" ").map((word, i) => ({
          word: word.toLowerCase().replace(/[^a-z']/g, ""),
          start: start + i * 0.2,
          end: start + i * 0.2 + 0.18,
          confidence: 0.98,
          punctuated_word: word
        }))
      }]
    },
    metadata: { request_id: "mock-request", model_info: { name: "2-general-nova", version: "mock", arch: "nova-3" }, model_uuid: "mock" }
  })

export const make = (options: DeepgramMockOptions = {}) =>
  Effect.acquireRelease(
    Effect.callback<{ mock: DeepgramMock; close: () => void }>((resume) => {
      const connections: Array<ConnectionRecord> = []
      const faults: DeepgramMockFaults = {}
      const apiKey = options.apiKey ?? "dg-test"
      const scripts = options.transcripts ?? ["hello from the deepgram mock"]
      let utterance = 0
      let refused = 0
      const http = createServer()
      // Pongs are each connection's to send: a silent (half-open) one sends none.
      const wss = new WebSocketServer({ noServer: true, autoPong: false })
      http.on("upgrade", (req, socket, head) => {
        const status = faults.rejectStatus ?? (req.headers.authorization === `Token ${apiKey}` ? undefined : 401)
        if (status !== undefined) {
          refused++
          const body = JSON.stringify({ err_code: status === 401 ? "INVALID_AUTH" : "ERROR", err_msg: "Invalid credentials." })
          socket.end(`HTTP/1.1 ${status} Refused\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
          return
        }
        wss.handleUpgrade(req, socket, head, (ws) => {
          const record: ConnectionRecord = {
            query: new URL(req.url ?? "/", "http://mock").searchParams,
            authorization: req.headers.authorization,
            audioBytes: 0,
            control: [],
            pings: 0
          }
          connections.push(record)
          const bytesPerMs = Number(record.query.get("sample_rate") ?? 16000) / 500
          let utteranceBytes = 0
          let revealed = 0
          let started = 0
          let idle: NodeJS.Timeout | undefined
          const closeWith = (code: number, reason: string) => {
            record.closedByServer = { code, reason }
            ws.close(code, reason)
          }
          const touch = () => {
            clearTimeout(idle)
            idle = setTimeout(() => closeWith(1011, "NET-0001"), options.inactivityMs ?? 10_000)
          }
          touch()
          let silent = false
          ws.on("ping", (data) => {
            record.pings++
            if (!silent) ws.pong(data)
          })
          ws.on("close", () => clearTimeout(idle))
          // A client that drops the connection (its pings found it silent) resets it: not an error here.
          ws.on("error", () => {})
          ws.on("message", (data, isBinary) => {
            if (silent) return
            if (isBinary && faults.silentAfterBytes !== undefined && record.audioBytes >= faults.silentAfterBytes) {
              silent = true
              clearTimeout(idle)
              return
            }
            touch()
            if (isBinary) {
              const bytes = (data as Buffer).byteLength
              if (record.audioBytes === 0 || utteranceBytes === 0) {
                ws.send(JSON.stringify({ type: "SpeechStarted", channel: [0], timestamp: started }))
              }
              record.audioBytes += bytes
              utteranceBytes += bytes
              const fault = faults.closeAfterBytes
              if (fault !== undefined && record.audioBytes >= fault.bytes) return closeWith(fault.code, fault.reason)
              const words = scripts[Math.min(utterance, scripts.length - 1)]!.split(" ")
              const due = Math.min(words.length, Math.floor(utteranceBytes / bytesPerMs / (options.msPerWord ?? 200)))
              if (due > revealed) {
                revealed = due
                ws.send(results(words.slice(0, due).join(" "), false, false, started, utteranceBytes / bytesPerMs / 1000))
              }
              return
            }
            const text = (data as Buffer).toString("utf8")
            record.control.push(text)
            const type = (JSON.parse(text) as { type?: string }).type
            if (type === "Finalize" && !faults.ignoreFinalize) {
              const transcript = utteranceBytes === 0 ? "" : scripts[Math.min(utterance, scripts.length - 1)]!
              const answer = results(transcript, true, true, started, utteranceBytes / bytesPerMs / 1000)
              if (faults.finalizeDelayMs === undefined) ws.send(answer)
              else setTimeout(() => ws.readyState === ws.OPEN && ws.send(answer), faults.finalizeDelayMs)
              if (utteranceBytes > 0) utterance++
              started += utteranceBytes / bytesPerMs / 1000
              utteranceBytes = 0
              revealed = 0
            } else if (type === "CloseStream") {
              ws.send(JSON.stringify({
                type: "Metadata",
                transaction_key: "deprecated",
                request_id: "mock-request",
                sha256: "0",
                created: new Date(0).toISOString(),
                duration: record.audioBytes / bytesPerMs / 1000,
                channels: 1
              }))
              ws.close(1000)
            }
          })
        })
      })
      http.listen(0, "127.0.0.1", () => {
        const port = (http.address() as AddressInfo).port
        resume(Effect.succeed({
          mock: { url: `ws://127.0.0.1:${port}/v1/listen`, connections, faults, refused: () => refused },
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
