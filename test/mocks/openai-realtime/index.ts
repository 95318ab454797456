/**
 * A protocol-faithful mock of the OpenAI Realtime GA WebSocket API (`gpt-realtime`), for tests and
 * benchmarks on 127.0.0.1. Facts: docs/protocols.md section 1.
 *
 * ```ts
 * const mock = yield* OpenAIRealtimeMock.make({ script: [Plan.call("get_weather", { city: "Paris" })] })
 * // connect a client to mock.url, then:
 * const conn = yield* mock.awaitConnection(0)
 * yield* conn.awaitReceived("response.create")
 * conn.receivedTypes() // every client frame, in order
 * ```
 */
import { Context, Effect, Layer, type Scope } from "effect"
import {
  acquireServer,
  type ConnectionHandle,
  makeConnectionHandle,
  makeServerHandle,
  type MockServerError,
  type ServerHandle
} from "../shared/handle.ts"
import { MockServer } from "../shared/server.ts"
import { scriptRunner } from "./plan.ts"
import { type OpenAIConnection, presentedKey, RealtimeState } from "./state.ts"
import type {
  ClientEvent,
  ErrorSpec,
  OpenAIAction,
  OpenAIRealtimeMockOptions,
  RealtimeItem,
  ResponsePlan,
  SessionConfig
} from "./types.ts"

export { Errors } from "./errors.ts"
export { echoScript, Plan } from "./plan.ts"
export type * from "./types.ts"

/** What the provider layer may rely on (docs/protocols.md 1.2 mutability table, 1.4 C). */
export const OPENAI_REALTIME_CAPABILITIES = {
  midSessionInstructionsUpdate: true,
  midSessionToolsUpdate: true,
  perResponseInstructions: true,
  perResponseToolChoice: true,
  /** OpenAI does not answer a tool output by itself: the client sends `response.create`. */
  autoToolReplyGeneration: false,
  /** `voice` is frozen once assistant audio exists; `model` never changes. */
  voiceFrozenAfterFirstAudio: true
} as const

export interface OpenAIRealtimeConnection extends ConnectionHandle<ClientEvent, ErrorSpec, OpenAIAction> {
  /** The effective session config now. */
  readonly session: () => SessionConfig
  /** The default conversation, in order. */
  readonly items: () => ReadonlyArray<RealtimeItem>
  readonly activeResponseIds: () => ReadonlyArray<string>
  readonly inputBufferedMs: () => number
  /** Parsed client events received so far (invalid frames excluded). */
  readonly clientEvents: () => ReadonlyArray<ClientEvent>
  /** A server-initiated response now (plan from the script when absent). */
  readonly pushResponse: (plan?: ResponsePlan, options?: { readonly conversation?: "auto" | "none" }) => Effect.Effect<void>
  /** The user speaks (speech events, commit, transcription, auto-response per turn_detection). */
  readonly userSpeaks: (options?: { readonly durationMs?: number; readonly transcript?: string }) => Effect.Effect<void>
  /** `error` session_expired then close 1000. */
  readonly expire: Effect.Effect<void>
}

export interface OpenAIRealtimeMock
  extends ServerHandle<ClientEvent, ErrorSpec, OpenAIAction, OpenAIRealtimeConnection>
{
  /** `ws://127.0.0.1:<port>/v1/realtime?model=gpt-realtime` */
  readonly url: string
  /** `http://127.0.0.1:<port>/v1` (an openai-node style baseURL). */
  readonly baseUrl: string
  readonly urlFor: (model: string) => string
}

const ACCEPTED_PATHS = ["/v1/realtime", "/openai/v1/realtime", "/openai/realtime"]

/** Starts the mock on 127.0.0.1 (port 0) in the current Scope. */
export const make = (
  options: OpenAIRealtimeMockOptions = {}
): Effect.Effect<OpenAIRealtimeMock, MockServerError, Scope.Scope> =>
  Effect.gen(function*() {
    const states = new WeakMap<OpenAIConnection, RealtimeState>()
    const ctx = { options, nextPlan: scriptRunner(options.script) }
    const userOnConnect = options.onConnect
    const server = yield* acquireServer("OpenAIRealtimeMock", () =>
      new MockServer<ClientEvent, ErrorSpec, OpenAIAction>(
        {
          ...options,
          onConnect: (info) => {
            const custom = userOnConnect?.(info)
            if (custom !== undefined) return custom
            if (options.apiKey !== undefined && (options.authFailure ?? "http") === "http" && presentedKey({ info }) !== options.apiKey) {
              return {
                kind: "reject",
                status: 401,
                body: JSON.stringify({ error: { type: "invalid_request_error", code: "invalid_api_key", message: "Incorrect API key provided." } })
              }
            }
            return undefined
          }
        },
        {
          acceptPath: (path) => ACCEPTED_PATHS.includes(path),
          selectProtocol: (offered) => (offered.includes("realtime") ? "realtime" : undefined),
          frameEncoding: "text",
          createSession: (conn) => {
            const state = new RealtimeState(conn, ctx)
            states.set(conn, state)
            return state
          }
        }
      ))
    const wrap = (conn: OpenAIConnection): OpenAIRealtimeConnection => {
      const state = states.get(conn)!
      const base = makeConnectionHandle(server, conn)
      return {
        ...base,
        session: () => state.session,
        items: () => state.conversation.items(),
        activeResponseIds: () => [...state.responses.keys()],
        inputBufferedMs: () => state.input.bufferedMs,
        clientEvents: () =>
          conn.received.flatMap((f) =>
            f.type !== undefined && typeof f.json === "object" && f.json !== null ? [f.json as ClientEvent] : []
          ),
        pushResponse: (plan, opts) =>
          base.perform({
            type: "respond",
            ...(plan === undefined ? {} : { plan }),
            ...(opts?.conversation === undefined ? {} : { conversation: opts.conversation })
          }),
        userSpeaks: (opts) => base.perform({ type: "userSpeaks", ...opts }),
        expire: base.perform({ type: "expire" })
      }
    }
    const handle = makeServerHandle(server, wrap)
    const origin = handle.origin
    return {
      ...handle,
      url: `${origin}/v1/realtime?model=${encodeURIComponent(options.model ?? "gpt-realtime")}`,
      baseUrl: `http://127.0.0.1:${server.port}/v1`,
      urlFor: (model: string) => `${origin}/v1/realtime?model=${encodeURIComponent(model)}`
    }
  })

/** The mock as a service, for `layer(...)` blocks of @effect/vitest. */
export class OpenAIRealtimeMockService extends Context.Service<OpenAIRealtimeMockService, OpenAIRealtimeMock>()(
  "baton/test/mocks/OpenAIRealtimeMock"
) {
  static readonly layer = (options: OpenAIRealtimeMockOptions = {}) => Layer.effect(OpenAIRealtimeMockService, make(options))
}
