/**
 * A local stand-in for Deepgram's live transcription (`/v1/listen` over WebSocket) on 127.0.0.1.
 * It checks `Authorization: Token <key>` (or `Bearer`, for temporary tokens) at the handshake (401
 * otherwise), takes binary PCM16 audio, and answers as `listen.ts` describes: interim results as
 * scripted words are heard, its own endpointing (`speech_final`), `UtteranceEnd` and
 * `SpeechStarted` when asked for, `Finalize` answered only when there is unfinalized speech, and
 * `CloseStream` that finishes the audio, sends `Metadata` and closes 1000. Idle for `inactivityMs`
 * it closes with 1011 NET-0001, as Deepgram does after 10 s. Faults: refuse the handshake, close
 * with a code and reason after N audio bytes, ignore or delay the `Finalize` answer, go silent.
 * Every message sent is recorded on the connection (`sent`).
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { type WebSocket, WebSocketServer } from "ws"
import { Listener, type ServerMessage } from "./listen.ts"

export interface DeepgramMockOptions {
  readonly apiKey?: string
  /** One transcript per utterance (the last repeats). */
  readonly transcripts?: ReadonlyArray<string>
  /** Speech audio per revealed word. Default 200 ms. */
  readonly msPerWord?: number
  /** Continuous speech finalized without a pause (`is_final`, not `speech_final`). Default 5000 ms. */
  readonly segmentMs?: number
  /** Default 10 000 ms, as Deepgram. */
  readonly inactivityMs?: number
  /** Every message goes out this much after the audio or control message that brought it (the
   * provider's processing time: a final comes this long after the audio's end). Default 0. */
  readonly latencyMs?: number
}

export interface DeepgramMockFaults {
  /** Refuse handshakes with this status. */
  rejectStatus?: number | undefined
  /** After this many audio bytes on a connection, close with `code` and `reason`. */
  closeAfterBytes?: { readonly bytes: number; readonly code: number; readonly reason: string } | undefined
  /** Never answer Finalize (Deepgram does not guarantee an answer). */
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
  /** What the client sent, in order: each audio message's size, and each control message. */
  readonly received: Array<{ readonly audioBytes: number } | { readonly control: string }>
  readonly control: Array<string>
  /** Liveness pings the client sent. */
  pings: number
  closedByServer?: { readonly code: number; readonly reason: string }
  /** Every message the mock sent on this connection, in order. */
  readonly sent: Array<ServerMessage>
}

export interface DeepgramMock {
  readonly url: string
  readonly connections: Array<ConnectionRecord>
  /** Handshakes refused (a wrong key, `rejectStatus`). */
  readonly refused: () => number
  readonly faults: DeepgramMockFaults
}

export const make = (options: DeepgramMockOptions = {}) =>
  Effect.acquireRelease(
    Effect.callback<{ mock: DeepgramMock; close: () => void }>((resume) => {
      const connections: Array<ConnectionRecord> = []
      const faults: DeepgramMockFaults = {}
      const apiKey = options.apiKey ?? "dg-test"
      const scripts = options.transcripts ?? ["hello from the deepgram mock"]
      let refused = 0
      const http = createServer()
      // Pongs are each connection's to send: a silent (half-open) one sends none.
      const wss = new WebSocketServer({ noServer: true, autoPong: false })
      http.on("upgrade", (req, socket, head) => {
        const authorized = [`Token ${apiKey}`, `token ${apiKey}`, `Bearer ${apiKey}`].includes(req.headers.authorization ?? "")
        const status = faults.rejectStatus ?? (authorized ? undefined : 401)
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
            received: [],
            control: [],
            pings: 0,
            sent: []
          }
          connections.push(record)
          serve(ws, record)
        })
      })
      const serve = (ws: WebSocket, record: ConnectionRecord) => {
        const listener = new Listener(record.query, {
          scripts,
          msPerWord: options.msPerWord ?? 200,
          segmentMs: options.segmentMs ?? 5000,
          requestId: randomUUID()
        })
        const sendNow = (message: ServerMessage) => {
          if (ws.readyState !== ws.OPEN) return
          record.sent.push(message)
          ws.send(JSON.stringify(message))
        }
        // One delay for every message keeps their order (timers of equal delay fire in order).
        const latency = options.latencyMs ?? 0
        const send = latency > 0 ? (message: ServerMessage) => void setTimeout(() => sendNow(message), latency) : sendNow
        let idle: NodeJS.Timeout | undefined
        let silent = false
        const closeWith = (code: number, reason: string) => {
          record.closedByServer = { code, reason }
          ws.close(code, reason)
        }
        const touch = () => {
          clearTimeout(idle)
          idle = setTimeout(() => closeWith(1011, "NET-0001"), options.inactivityMs ?? 10_000)
        }
        touch()
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
            const bytes = data as Buffer
            record.audioBytes += bytes.byteLength
            record.received.push({ audioBytes: bytes.byteLength })
            const fault = faults.closeAfterBytes
            if (fault !== undefined && record.audioBytes >= fault.bytes) return closeWith(fault.code, fault.reason)
            for (const message of listener.audio(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength))) send(message)
            return
          }
          const text = (data as Buffer).toString("utf8")
          record.control.push(text)
          record.received.push({ control: text })
          const type = (JSON.parse(text) as { type?: string }).type
          if (type === "Finalize" && !faults.ignoreFinalize) {
            const answer = listener.flush()
            if (answer === undefined) return
            if (faults.finalizeDelayMs === undefined) send(answer)
            else setTimeout(() => send(answer), faults.finalizeDelayMs)
          } else if (type === "CloseStream") {
            for (const message of listener.close()) send(message)
            ws.close(1000)
          }
        })
      }
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
