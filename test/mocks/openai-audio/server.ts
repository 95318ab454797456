/**
 * A local stand-in for OpenAI's audio endpoints on 127.0.0.1: `POST /v1/audio/transcriptions`
 * (multipart with `file` and `model`; answers `{"text"}` from a script, after checking the file
 * is a WAV it could decode) and `POST /v1/audio/speech` (JSON; answers raw PCM16 24 kHz mono in
 * chunks that split samples, when `response_format` is `pcm`). It checks the Bearer key, records
 * every request, and injects faults: an HTTP status with OpenAI's error body (and `retry-after`),
 * a connection dropped mid-body, or no answer at all.
 */
import { Effect } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as Wav from "../../../services/Wav.ts"

export type AudioFault =
  | { readonly kind: "status"; readonly status: number; readonly message?: string; readonly retryAfter?: number }
  /** Speech only: send this many bytes of audio, then destroy the connection. */
  | { readonly kind: "drop"; readonly afterBytes: number }
  /** Never answer. */
  | { readonly kind: "stall" }

export interface RecordedRequest {
  readonly path: string
  readonly authorization: string | undefined
  /** Transcriptions: the form fields (not the file) and the decoded file's rate and length. */
  readonly fields: Record<string, string>
  readonly file?: { readonly sampleRate: number; readonly channels: number; readonly durationMs: number }
  /** Speech: the JSON body. */
  readonly json?: Record<string, unknown>
}

export interface OpenAiAudioMockOptions {
  readonly apiKey?: string
  /** Texts answered by successive transcriptions (the last repeats). */
  readonly transcripts?: ReadonlyArray<string>
  /** Audio per character of speech input, ms. Default 40. */
  readonly msPerChar?: number
  /** Bytes per body write for speech (odd, to split samples). Default 4801. */
  readonly chunkBytes?: number
}

export interface OpenAiAudioMock {
  readonly baseUrl: string
  readonly requests: Array<RecordedRequest>
  /** Faults for the next requests, in order, one each. */
  readonly faults: Array<AudioFault>
}

const errorBody = (status: number, message: string) =>
  JSON.stringify({
    error: {
      message,
      type: status === 429 ? "requests" : status >= 500 ? "server_error" : "invalid_request_error",
      param: null,
      code: status === 401 ? "invalid_api_key" : null
    }
  })

const sendError = (res: ServerResponse, status: number, message: string, retryAfter?: number) => {
  res.writeHead(status, {
    "content-type": "application/json",
    ...(retryAfter === undefined ? {} : { "retry-after": String(retryAfter) })
  })
  res.end(errorBody(status, message))
}

const readBody = (req: IncomingMessage) =>
  new Promise<Buffer>((resolve, reject) => {
    const parts: Array<Buffer> = []
    req.on("data", (b: Buffer) => parts.push(b))
    req.on("end", () => resolve(Buffer.concat(parts)))
    req.on("error", reject)
  })

/** A 440 Hz tone at 24 kHz: something audible and checkable. */
const tone = (ms: number) => {
  const samples = Math.round((ms / 1000) * 24000)
  const out = Buffer.alloc(samples * 2)
  for (let i = 0; i < samples; i++) out.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 24000)), i * 2)
  return out
}

export const make = (options: OpenAiAudioMockOptions = {}) =>
  Effect.acquireRelease(
    Effect.callback<{ mock: OpenAiAudioMock; close: () => void }>((resume) => {
      const requests: Array<RecordedRequest> = []
      const faults: Array<AudioFault> = []
      let transcriptIndex = 0
      const apiKey = options.apiKey ?? "sk-test"

      const transcriptions = async (req: IncomingMessage, res: ServerResponse, body: Buffer, auth: string | undefined) => {
        const form = await new Request("http://mock/", {
          method: "POST",
          headers: { "content-type": req.headers["content-type"] ?? "" },
          body
        }).formData().catch(() => undefined)
        const fields: Record<string, string> = {}
        form?.forEach((v, k) => {
          if (typeof v === "string") fields[k] = v
        })
        const file = form?.get("file")
        if (form === undefined || !(file instanceof Blob)) {
          requests.push({ path: "/v1/audio/transcriptions", authorization: auth, fields })
          return sendError(res, 400, "Could not parse multipart form")
        }
        if (fields["model"] === undefined) return sendError(res, 400, "you must provide a model parameter")
        const decoded = Wav.decodeSync(new Uint8Array(await file.arrayBuffer()))
        if (typeof decoded === "string") {
          requests.push({ path: "/v1/audio/transcriptions", authorization: auth, fields })
          return sendError(res, 400, "Invalid file format. Supported formats: ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']")
        }
        requests.push({
          path: "/v1/audio/transcriptions",
          authorization: auth,
          fields,
          file: {
            sampleRate: decoded.sampleRate,
            channels: decoded.channels,
            durationMs: (decoded.data.length / decoded.channels / decoded.sampleRate) * 1000
          }
        })
        const scripts = options.transcripts ?? ["hello from the mock"]
        const text = scripts[Math.min(transcriptIndex++, scripts.length - 1)]!
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ text, usage: { type: "duration", seconds: 1 } }))
      }

      const speech = (res: ServerResponse, body: Buffer, auth: string | undefined, drop: number | undefined) => {
        let json: Record<string, unknown>
        try {
          json = JSON.parse(body.toString("utf8"))
        } catch {
          return sendError(res, 400, "We could not parse the JSON body of your request.")
        }
        requests.push({ path: "/v1/audio/speech", authorization: auth, fields: {}, json })
        if (typeof json["input"] !== "string" || json["input"] === "") return sendError(res, 400, "input is required")
        if (typeof json["model"] !== "string") return sendError(res, 400, "model is required")
        if (json["response_format"] !== "pcm") return sendError(res, 400, "the mock only speaks pcm")
        const audio = tone(json["input"].length * (options.msPerChar ?? 40))
        res.writeHead(200, { "content-type": "audio/pcm", "transfer-encoding": "chunked" })
        const step = options.chunkBytes ?? 4801
        let at = 0
        const next = (): void => {
          if (drop !== undefined && at >= drop) return void res.destroy()
          if (at >= audio.length) return void res.end()
          res.write(audio.subarray(at, at + step), () => setImmediate(next))
          at += step
        }
        next()
      }

      const server = createServer((req, res) => {
        void readBody(req).then((body) => {
          const auth = req.headers.authorization
          const fault = faults.shift()
          if (fault?.kind === "stall") return
          if (auth !== `Bearer ${apiKey}`) {
            requests.push({ path: req.url ?? "", authorization: auth, fields: {} })
            return sendError(res, 401, "Incorrect API key provided: sk-***. You can find your API key at https://platform.openai.com/account/api-keys.")
          }
          if (fault?.kind === "status") return sendError(res, fault.status, fault.message ?? "The server had an error", fault.retryAfter)
          if (req.method === "POST" && req.url === "/v1/audio/transcriptions") return transcriptions(req, res, body, auth)
          if (req.method === "POST" && req.url === "/v1/audio/speech") {
            return speech(res, body, auth, fault?.kind === "drop" ? fault.afterBytes : undefined)
          }
          sendError(res, 404, `Invalid URL (${req.method} ${req.url})`)
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as AddressInfo).port
        resume(Effect.succeed({
          mock: { baseUrl: `http://127.0.0.1:${port}/v1`, requests, faults },
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        }))
      })
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ mock }) => mock))
