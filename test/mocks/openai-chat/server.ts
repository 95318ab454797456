/**
 * A local stand-in for OpenAI's Chat Completions (`POST /v1/chat/completions`) on 127.0.0.1, for
 * benches and peers' own clients (agents-js's OpenAI plugin, the `openai` SDK). It checks the
 * Bearer key (401 with OpenAI's error body otherwise) and the request (`model` and `messages`,
 * 400 without), answers each request with what `respond` decides from it (text or one tool
 * call), streamed as OpenAI streams it: `chat.completion.chunk` events, the first carrying the
 * role, a last one with `finish_reason`, a usage chunk when `stream_options.include_usage`, then
 * `data: [DONE]`; or one `chat.completion` object without `stream`. `GET /v1/models` lists one
 * model (clients prewarm with it). Latency: the first delta comes `firstTokenMs` after the
 * request (the headers at once, as OpenAI sends them), then one every `tokenIntervalMs`.
 * Every request is recorded with its arrival time.
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface ChatMessage {
  readonly role: string
  readonly content?: unknown
  readonly tool_calls?: ReadonlyArray<{ readonly id: string; readonly function: { readonly name: string; readonly arguments: string } }>
  readonly tool_call_id?: string
}

export interface ChatRequest {
  readonly model: string
  readonly messages: ReadonlyArray<ChatMessage>
  readonly stream?: boolean
  readonly stream_options?: { readonly include_usage?: boolean }
  readonly tools?: ReadonlyArray<{ readonly type: string; readonly function: { readonly name: string } }>
}

/** What a request is answered with. */
export type ChatAnswer =
  | { readonly text: string }
  | { readonly toolCall: { readonly name: string; readonly arguments?: string } }

export interface ChatMockOptions {
  readonly apiKey?: string
  /** The answer to each request. Default: a fixed sentence. */
  readonly respond?: (request: ChatRequest) => ChatAnswer
  /** From the request to the first delta (the model's time to first token). Default 0. */
  readonly firstTokenMs?: number
  /** Between later deltas. Default 0 (each in its own write). */
  readonly tokenIntervalMs?: number
}

export interface RecordedChatRequest {
  readonly path: string
  readonly body: ChatRequest
  /** performance.now() when the body had arrived. */
  readonly at: number
}

export interface ChatMock {
  /** `http://127.0.0.1:PORT/v1`, what clients take as their base URL. */
  readonly baseUrl: string
  readonly requests: Array<RecordedChatRequest>
  /** Requests refused (a wrong key, a malformed body). */
  refused: number
}

/** Names every function of the request's tools. */
export const toolNames = (request: ChatRequest): ReadonlyArray<string> => (request.tools ?? []).map((t) => t.function.name)

const defaultAnswer: ChatAnswer = { text: "Hello from the chat mock." }

const sendError = (res: ServerResponse, status: number, message: string, code: string | null, param: string | null = null) => {
  res.writeHead(status, { "content-type": "application/json", "x-request-id": `req_${randomUUID()}` })
  res.end(JSON.stringify({ error: { message, type: "invalid_request_error", param, code } }))
}

/** Words with their trailing spaces, as a model streams them. */
const pieces = (text: string) => text.match(/\S+\s*/g) ?? [text]

const wait = (ms: number) => new Promise<void>((resolve) => (ms > 0 ? setTimeout(resolve, ms) : setImmediate(resolve)))

/** Starts the mock; `close` stops it and drops open connections. */
export const start = (options: ChatMockOptions = {}): Promise<{ readonly mock: ChatMock; readonly close: () => void }> =>
  new Promise((resolve) => {
    const apiKey = options.apiKey ?? "sk-test"
    const respond = options.respond ?? (() => defaultAnswer)
    const mock: ChatMock = { baseUrl: "", requests: [], refused: 0 }

    const stream = async (res: ServerResponse, request: ChatRequest, answer: ChatAnswer, id: string) => {
      const created = Math.floor(Date.now() / 1000)
      const usage = request.stream_options?.include_usage === true
      const chunk = (delta: Record<string, unknown>, finish: string | null) =>
        `data: ${
          JSON.stringify({
            id,
            object: "chat.completion.chunk",
            created,
            model: request.model,
            system_fingerprint: "fp_mock",
            choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
            ...(usage ? { usage: null } : {})
          })
        }\n\n`
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-request-id": `req_${id}` })
      res.flushHeaders()
      await wait(options.firstTokenMs ?? 0)
      const deltas: Array<Record<string, unknown>> = "text" in answer
        ? pieces(answer.text).map((content, i) => (i === 0 ? { role: "assistant", content, refusal: null } : { content }))
        : [
          {
            role: "assistant",
            content: null,
            tool_calls: [{ index: 0, id: `call_${id.slice(0, 24)}`, type: "function", function: { name: answer.toolCall.name, arguments: "" } }]
          },
          { tool_calls: [{ index: 0, function: { arguments: answer.toolCall.arguments ?? "{}" } }] }
        ]
      for (const [i, delta] of deltas.entries()) {
        if (res.destroyed) return
        if (i > 0) await wait(options.tokenIntervalMs ?? 0)
        res.write(chunk(delta, null))
      }
      res.write(chunk({}, "text" in answer ? "stop" : "tool_calls"))
      if (usage) {
        const completion = deltas.length
        res.write(`data: ${
          JSON.stringify({
            id,
            object: "chat.completion.chunk",
            created,
            model: request.model,
            system_fingerprint: "fp_mock",
            choices: [],
            usage: { prompt_tokens: 10, completion_tokens: completion, total_tokens: 10 + completion }
          })
        }\n\n`)
      }
      res.end("data: [DONE]\n\n")
    }

    const whole = async (res: ServerResponse, request: ChatRequest, answer: ChatAnswer, id: string) => {
      await wait(options.firstTokenMs ?? 0)
      const message = "text" in answer
        ? { role: "assistant", content: answer.text, refusal: null }
        : {
          role: "assistant",
          content: null,
          tool_calls: [{ id: `call_${id.slice(0, 24)}`, type: "function", function: { name: answer.toolCall.name, arguments: answer.toolCall.arguments ?? "{}" } }]
        }
      res.writeHead(200, { "content-type": "application/json", "x-request-id": `req_${id}` })
      res.end(JSON.stringify({
        id,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: request.model,
        system_fingerprint: "fp_mock",
        choices: [{ index: 0, message, logprobs: null, finish_reason: "text" in answer ? "stop" : "tool_calls" }],
        usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 }
      }))
    }

    const handle = (req: IncomingMessage, res: ServerResponse, raw: string) => {
      const path = (req.url ?? "/").split("?")[0]!
      if (req.headers.authorization !== `Bearer ${apiKey}`) {
        mock.refused++
        return sendError(res, 401, "Incorrect API key provided.", "invalid_api_key")
      }
      if (req.method === "GET" && path === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" })
        return res.end(JSON.stringify({ object: "list", data: [{ id: "gpt-4.1-mini", object: "model", created: 1_700_000_000, owned_by: "openai" }] }))
      }
      if (req.method !== "POST" || path !== "/v1/chat/completions") {
        return sendError(res, 404, `Invalid URL (${req.method} ${path})`, null)
      }
      let body: ChatRequest
      try {
        body = JSON.parse(raw) as ChatRequest
      } catch {
        mock.refused++
        return sendError(res, 400, "We could not parse the JSON body of your request.", null)
      }
      if (typeof body.model !== "string") {
        mock.refused++
        return sendError(res, 400, "you must provide a model parameter", null, "model")
      }
      if (!Array.isArray(body.messages) || body.messages.length === 0) {
        mock.refused++
        return sendError(res, 400, "Missing required parameter: 'messages'.", "missing_required_parameter", "messages")
      }
      mock.requests.push({ path, body, at: performance.now() })
      const id = `chatcmpl-${randomUUID().replaceAll("-", "")}`
      const answer = respond(body)
      void (body.stream === true ? stream(res, body, answer, id) : whole(res, body, answer, id))
    }

    const http = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => handle(req, res, Buffer.concat(chunks).toString("utf8")))
    })
    http.listen(0, "127.0.0.1", () => {
      ;(mock as { baseUrl: string }).baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1`
      resolve({
        mock,
        close: () => {
          http.closeAllConnections()
          http.close()
        }
      })
    })
  })

/** The mock in a Scope. */
export const make = (options: ChatMockOptions = {}) =>
  Effect.acquireRelease(Effect.promise(() => start(options)), ({ close }) => Effect.sync(close)).pipe(
    Effect.map(({ mock }) => mock)
  )
