/**
 * A protocol-faithful mock of the Gemini Live API (BidiGenerateContent over WebSocket), for tests
 * and benchmarks on 127.0.0.1. Facts: docs/protocols.md section 2.
 *
 * Capability facts (2.6, 2.7): tools and the system instruction are fixed by `setup` and cannot
 * change mid-session (only by reconnecting, e.g. with a resumption handle); there is no
 * `tool_choice`; the model continues by itself after a `toolResponse`; errors are close frames.
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
import { geminiScriptRunner } from "./plan.ts"
import { ResumptionStore, type SetupInfo } from "./setup.ts"
import { type GeminiConnection, GeminiState } from "./state.ts"
import type {
  CloseSpec,
  Content,
  FunctionResponse,
  GeminiAction,
  GeminiClientMessage,
  GeminiLiveMockOptions,
  GeminiTurnPlan,
  ToolCallPlan
} from "./types.ts"

export { GeminiPlan, geminiEchoScript } from "./plan.ts"
export type * from "./types.ts"

export const GEMINI_LIVE_CAPABILITIES = {
  /** System instructions are fixed by `setup` (a `clientContent` turn is the workaround). */
  midSessionInstructionsUpdate: false,
  /** Tools are fixed by `setup`; changing them needs a new connection. */
  midSessionToolsUpdate: false,
  perResponseToolChoice: false,
  /** Chat context is append-only (`clientContent`); no removal. */
  mutableChatContext: false,
  /** The model answers a `toolResponse` by itself. */
  autoToolReplyGeneration: true,
  /** Config may differ (except the model) when resuming with a handle. */
  configChangeOnResume: true
} as const

export interface GeminiLiveConnection extends ConnectionHandle<GeminiClientMessage, CloseSpec, GeminiAction> {
  /** Settings derived from `setup` (undefined before it). */
  readonly setup: () => SetupInfo | undefined
  readonly history: () => ReadonlyArray<Content>
  readonly pendingToolCallIds: () => ReadonlyArray<string>
  /** Function responses whose id matched no pending call (unknown or cancelled). */
  readonly unmatchedToolResponses: () => ReadonlyArray<FunctionResponse>
  readonly resumed: () => boolean
  readonly clientMessages: () => ReadonlyArray<GeminiClientMessage>
  readonly pushTurn: (plan?: GeminiTurnPlan) => Effect.Effect<void>
  readonly pushToolCall: (calls: ReadonlyArray<ToolCallPlan>) => Effect.Effect<void>
  readonly cancelToolCalls: (ids?: ReadonlyArray<string>) => Effect.Effect<void>
  readonly interrupt: Effect.Effect<void>
  readonly userSpeaks: (options?: { readonly durationMs?: number; readonly transcript?: string }) => Effect.Effect<void>
  readonly goAway: (options?: { readonly timeLeftMs?: number; readonly closeAfterMs?: number | null; readonly code?: number }) => Effect.Effect<void>
  readonly sendResumptionUpdate: (resumable?: boolean) => Effect.Effect<void>
}

export interface GeminiLiveMock extends ServerHandle<GeminiClientMessage, CloseSpec, GeminiAction, GeminiLiveConnection> {
  /** `ws://127.0.0.1:<port>/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent?key=test-key` */
  readonly url: string
  /** Same endpoint with another query key. */
  readonly urlWithKey: (key: string) => string
  /** Resumption handles issued so far (valid until invalidated). */
  readonly resumptionHandles: () => ReadonlyArray<string>
  /** Invalidates one handle, or all (an expired token). */
  readonly invalidateResumptionHandle: (handle?: string) => Effect.Effect<void>
}

/** The SDK joins its base URL (which ends with "/") and "/ws/...": Google serves "//ws/..." too. */
const PATH_RE =
  /^\/+ws\/(google\.ai\.generativelanguage\.v1(alpha|beta)\.GenerativeService\.BidiGenerateContent(Constrained)?|google\.cloud\.aiplatform\.v1(beta1)?\.LlmBidiService\/BidiGenerateContent)$/
const DEV_PATH = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"

export const make = (options: GeminiLiveMockOptions = {}): Effect.Effect<GeminiLiveMock, MockServerError, Scope.Scope> =>
  Effect.gen(function*() {
    const states = new WeakMap<GeminiConnection, GeminiState>()
    const store = new ResumptionStore()
    const ctx = { options, nextPlan: geminiScriptRunner(options.script), store }
    const server = yield* acquireServer("GeminiLiveMock", () =>
      new MockServer<GeminiClientMessage, CloseSpec, GeminiAction>(options, {
        acceptPath: (path) => PATH_RE.test(path),
        frameEncoding: options.frameEncoding ?? "text",
        createSession: (conn) => {
          const state = new GeminiState(conn, ctx)
          states.set(conn, state)
          return state
        }
      }))
    const wrap = (conn: GeminiConnection): GeminiLiveConnection => {
      const state = states.get(conn)!
      const base = makeConnectionHandle(server, conn)
      return {
        ...base,
        setup: () => state.setup,
        history: () => state.history.map((h) => h.content),
        pendingToolCallIds: () => [...state.pending.values()].flatMap((p) => (p.id === undefined ? [] : [p.id])),
        unmatchedToolResponses: () => [...state.unmatchedResponses],
        resumed: () => state.resumed,
        clientMessages: () =>
          conn.received.flatMap((f) => (f.type !== undefined && typeof f.json === "object" && f.json !== null ? [f.json as GeminiClientMessage] : [])),
        pushTurn: (plan) => base.perform({ type: "respond", ...(plan === undefined ? {} : { plan }) }),
        pushToolCall: (calls) => base.perform({ type: "toolCall", calls }),
        cancelToolCalls: (ids) => base.perform({ type: "cancelToolCalls", ...(ids === undefined ? {} : { ids }) }),
        interrupt: base.perform({ type: "interrupt" }),
        userSpeaks: (opts) => base.perform({ type: "userSpeaks", ...opts }),
        goAway: (opts) => base.perform({ type: "goAway", ...opts }),
        sendResumptionUpdate: (resumable) =>
          base.perform({ type: "resumptionUpdate", ...(resumable === undefined ? {} : { resumable }) })
      }
    }
    const handle = makeServerHandle(server, wrap)
    const urlWithKey = (key: string) => `${handle.origin}${DEV_PATH}?key=${encodeURIComponent(key)}`
    return {
      ...handle,
      url: urlWithKey(options.apiKey ?? "test-key"),
      urlWithKey,
      resumptionHandles: () => store.handles(),
      invalidateResumptionHandle: (h) => Effect.sync(() => store.invalidate(h))
    }
  })

export class GeminiLiveMockService extends Context.Service<GeminiLiveMockService, GeminiLiveMock>()(
  "baton/test/mocks/GeminiLiveMock"
) {
  static readonly layer = (options: GeminiLiveMockOptions = {}) => Layer.effect(GeminiLiveMockService, make(options))
}
