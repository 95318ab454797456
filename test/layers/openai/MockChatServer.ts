/**
 * A scriptable chat-completions SSE server for tests (Node `http` on
 * 127.0.0.1, port 0).
 *
 * Each incoming `POST .../chat/completions` takes the next scripted reply;
 * every request is recorded (method, path, headers, parsed JSON body) with a
 * `Deferred` that completes when the server sees the connection close.
 *
 * Wire format follows OpenAI: `Content-Type: text/event-stream`, events
 * `data: {json}\n\n`, terminated by `data: [DONE]\n\n`; errors are JSON
 * bodies `{"error":{"message","type","code"}}`.
 */
import * as Http from "node:http"
import type { Socket } from "node:net"
import { Deferred, Effect, Exit, Option, Queue, Schema } from "effect"

/** One scripted reply. */
export type Reply =
  | {
    readonly _tag: "Sse"
    /** Raw SSE text pieces, each written with its own `write` call. */
    readonly frames: ReadonlyArray<string>
    /** After the frames: end the response, destroy the socket (drop), or keep it open. */
    readonly then: "end" | "destroy" | "hang"
    /** With `then: "end"`: hold the end of the response until this completes. */
    readonly holdEnd?: Deferred.Deferred<void> | undefined
  }
  | {
    readonly _tag: "Error"
    readonly status: number
    readonly body: string
    readonly headers?: Readonly<Record<string, string>>
  }
  | { readonly _tag: "Reset" }

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: any
  /** Client port of the TCP connection (equal ports = a reused keep-alive connection). */
  readonly remotePort: number | undefined
  /** Completes when the server sees the connection (socket) close. */
  readonly socketClosed: Deferred.Deferred<void>
  /** Completes when the response stream closes; `true` if it closed before the response finished. */
  readonly responseClosed: Deferred.Deferred<boolean>
}

export interface MockChatServer {
  readonly baseUrl: string
  readonly requests: ReadonlyArray<RecordedRequest>
  /** Scripts the replies of the next requests, in order. */
  readonly reply: (...replies: ReadonlyArray<Reply>) => void
  /** Waits for the next recorded request. */
  readonly nextRequest: Effect.Effect<RecordedRequest>
}

/** OpenAI's rule for `tools[i].function.parameters`: absent, or a JSON Schema of type object. */
export const checkToolSchemas = (body: unknown): { readonly message: string; readonly param: string } | undefined => {
  const tools = typeof body === "object" && body !== null ? (body as { tools?: unknown }).tools : undefined
  if (!Array.isArray(tools)) return undefined
  for (let i = 0; i < tools.length; i++) {
    const fn = (tools[i] as { function?: { name?: unknown; parameters?: unknown } } | null)?.function
    const parameters = fn?.parameters as Record<string, unknown> | undefined
    if (parameters === undefined) continue
    if (typeof parameters !== "object" || parameters === null || parameters["type"] !== "object") {
      const got = typeof parameters === "object" && parameters !== null && typeof parameters["type"] === "string" ? parameters["type"] : "None"
      return {
        message: `Invalid schema for function '${String(fn?.name)}': schema must be a JSON Schema of 'type: "object"', got 'type: "${got}"'.`,
        param: `tools[${i}].function.parameters`
      }
    }
  }
  return undefined
}

// ----------------------------------------------------------------------------
// Reply builders
// ----------------------------------------------------------------------------

export const CREATED = 1_700_000_000

/** A `chat.completion.chunk` with OpenAI's envelope fields. */
export const chunk = (
  choices: ReadonlyArray<unknown>,
  extra: Record<string, unknown> = {}
): Record<string, unknown> => ({
  id: "chatcmpl-test1",
  object: "chat.completion.chunk",
  created: CREATED,
  model: "gpt-test-2024",
  system_fingerprint: "fp_test",
  choices,
  ...extra
})

/** A chunk with one choice (index 0). */
export const delta = (d: Record<string, unknown>, finishReason: string | null = null) =>
  chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finishReason }])

export const usageChunk = (prompt: number, completion: number) =>
  chunk([], { usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } })

export const toolDelta = (index: number, fn: { name?: string; arguments?: string }, id?: string) =>
  delta({
    tool_calls: [
      id === undefined
        ? { index, function: fn }
        : { index, id, type: "function", function: { name: fn.name, arguments: fn.arguments ?? "" } }
    ]
  })

export const data = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`
export const DONE = "data: [DONE]\n\n"

export const sse = (
  payloads: ReadonlyArray<unknown>,
  options: {
    readonly done?: boolean
    readonly then?: "end" | "destroy" | "hang"
    readonly holdEnd?: Deferred.Deferred<void>
  } = {}
): Reply => ({
  _tag: "Sse",
  frames: [...payloads.map((p) => (typeof p === "string" ? p : data(p))), ...(options.done === false ? [] : [DONE])],
  then: options.then ?? "end",
  holdEnd: options.holdEnd
})

export const errorReply = (
  status: number,
  error: { readonly message: string; readonly type: string; readonly code: string | null },
  headers: Readonly<Record<string, string>> = {}
): Reply => ({ _tag: "Error", status, body: JSON.stringify({ error }), headers })

// ----------------------------------------------------------------------------
// Server
// ----------------------------------------------------------------------------

const writeFrames = (res: Http.ServerResponse, frames: ReadonlyArray<string>, done: () => void) => {
  let i = 0
  const next = (): void => {
    if (i >= frames.length || res.destroyed) return done()
    const frame = frames[i++]!
    res.write(frame, () => setImmediate(next))
  }
  next()
}

const parseJson = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Unknown))

export const make: Effect.Effect<MockChatServer, never, import("effect").Scope.Scope> = Effect.gen(function*() {
  const replies: Array<Reply> = []
  const requests: Array<RecordedRequest> = []
  const incoming = yield* Queue.unbounded<RecordedRequest>()
  const sockets = new Set<Socket>()

  const handle = (req: Http.IncomingMessage, res: Http.ServerResponse, body: string) => {
    const parsed = Option.getOrElse(parseJson(body), () => body)
    const socketClosed = Deferred.makeUnsafe<void>()
    const responseClosed = Deferred.makeUnsafe<boolean>()
    req.socket.once("close", () => Deferred.doneUnsafe(socketClosed, Exit.void))
    res.once("close", () => Deferred.doneUnsafe(responseClosed, Exit.succeed(!res.writableFinished)))
    const recorded: RecordedRequest = {
      method: req.method ?? "",
      path: req.url ?? "",
      headers: req.headers,
      body: parsed,
      remotePort: req.socket.remotePort,
      socketClosed,
      responseClosed
    }
    requests.push(recorded)
    Queue.offerUnsafe(incoming, recorded)

    // As strict as OpenAI: a function whose parameters are not an object schema refuses the
    // whole request (400), before any scripted reply is used.
    const refusal = checkToolSchemas(parsed)
    if (refusal !== undefined) {
      res.writeHead(400, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { ...refusal, type: "invalid_request_error", code: "invalid_function_parameters" } }))
      return
    }
    const reply = replies.shift()
    if (reply === undefined) {
      res.writeHead(500, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { message: "mock: no scripted reply", type: "server_error", code: null } }))
      return
    }
    switch (reply._tag) {
      case "Reset": {
        req.socket.destroy()
        return
      }
      case "Error": {
        res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
        res.end(reply.body)
        return
      }
      case "Sse": {
        res.writeHead(200, {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache",
          "x-request-id": "req_test"
        })
        res.flushHeaders()
        writeFrames(res, reply.frames, () => {
          if (reply.then === "end" && reply.holdEnd !== undefined) {
            Effect.runFork(Deferred.await(reply.holdEnd).pipe(Effect.andThen(Effect.sync(() => res.end()))))
          } else if (reply.then === "end") res.end()
          else if (reply.then === "destroy") req.socket.destroy()
        })
        return
      }
    }
  }

  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => handle(req, res, Buffer.concat(chunks).toString("utf8")))
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.once("close", () => sockets.delete(socket))
  })

  const port = yield* Effect.acquireRelease(
    Effect.callback<number>((resume) => {
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
      })
    }),
    () =>
      Effect.callback<void>((resume) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  )

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    reply: (...more) => void replies.push(...more),
    nextRequest: Queue.take(incoming)
  } satisfies MockChatServer
})
