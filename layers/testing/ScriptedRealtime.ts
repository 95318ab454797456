/**
 * An in-memory `RealtimeModel` for tests: scripted responses (the same rules as
 * `ScriptedModel`, matched on the last item the server holds or the response's instructions),
 * configurable capabilities, acknowledgement delays and injected faults (`RealtimeFaults.ts`),
 * all on the Effect clock so `TestClock` drives it. It records every operation of every
 * connection (`RealtimeRecorder.ts`).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Cause, Context, Deferred, type Duration, Effect, Fiber, Layer, Queue, Scope, Stream } from "effect"
import { ModelCall } from "../../services/ModelCall.ts"
import {
  type Ack,
  type RealtimeCapabilities,
  type RealtimeConnection,
  RealtimeError,
  type RealtimeEvent,
  RealtimeModel,
  type RealtimeSessionConfig,
  type RealtimeToolChoice
} from "../../services/RealtimeModel.ts"
import { ChatContext } from "../../src/ChatContext.ts"
import { toPrompt } from "../../src/ChatPrompt.ts"
import * as RealtimeFaults from "./RealtimeFaults.ts"
import { type ConnectionRecord, ScriptedRealtime } from "./RealtimeRecorder.ts"
import * as ScriptedModel from "./ScriptedModel.ts"

export type { Faults } from "./RealtimeFaults.ts"
export { type ConnectionRecord, type Op, ScriptedRealtime, type ScriptedRealtimeService } from "./RealtimeRecorder.ts"

/**
 * The capabilities of an OpenAI Realtime-like model: instructions, tools and the conversation
 * change on an open connection; the default of `layer`.
 *
 * @since 0.1.0
 * @category constants
 */
export const openAiLike: RealtimeCapabilities = {
  mutableInstructions: true,
  mutableTools: true,
  mutableChatContext: true,
  perResponseToolChoice: true,
  manualFunctionCalls: true,
  autoToolReply: false,
  audioOutput: true,
  userTranscription: true,
  serverTurnDetection: true,
  messageTruncation: true
}

/**
 * The capabilities of a Gemini Live-like model: instructions, tools and the conversation are fixed
 * at connect time.
 *
 * @since 0.1.0
 * @category constants
 */
export const geminiLike: RealtimeCapabilities = {
  ...openAiLike,
  mutableInstructions: false,
  mutableTools: false,
  mutableChatContext: false,
  perResponseToolChoice: false,
  messageTruncation: false
}

/**
 * Options of the scripted realtime model: its rules (as for `ScriptedModel`), capabilities, names,
 * delays, and the faults to inject (`Faults`: rejected updates, dropped connections, failed or
 * stalled responses, turns it cannot transcribe).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends RealtimeFaults.Faults {
  /** Server item ids start after this number (default 0): a second server in one test (a
   * resumed session's) does not give ids the first one gave, as a real server never does. */
  readonly firstId?: number
  readonly rules: ReadonlyArray<ScriptedModel.Rule>
  readonly capabilities?: RealtimeCapabilities
  readonly provider?: string
  readonly model?: string
  readonly connectDelay?: Duration.Input
  /** Time until an update is acknowledged. */
  readonly ackDelay?: Duration.Input
  /** Time from a response request to its first event. */
  readonly responseDelay?: Duration.Input
  /** Emit audio (PCM16 at 24 kHz, 10 ms per text delta) besides the transcript. */
  readonly audio?: boolean
  /** How long an {@link utterance} takes to say (from speech start to speech stop). Default 200 ms. */
  readonly speechDuration?: Duration.Input
  /**
   * The user's transcript comes this long after the end of their turn, without holding back
   * the server's answer, which may then start first (OpenAI transcribes on its own time).
   * Default: the transcript comes first.
   */
  readonly transcriptDelay?: Duration.Input
  /**
   * Whether the server reports the user's speech start and stop (OpenAI does; Gemini only says
   * `interrupted` when the user talks over an answer). Default true.
   */
  readonly speechEvents?: boolean
}

const UTTERANCE = "baton-scripted-utterance:"

/**
 * Audio this model hears as `text` (its turn detection: speech start, the user's transcript,
 * then an answer it starts by itself; an answer playing is stopped). Other audio is only logged.
 *
 * @since 0.1.0
 * @category constructors
 */
export const utterance = (text: string): Uint8Array => new TextEncoder().encode(UTTERANCE + text)

const heardText = (pcm: Uint8Array): string | undefined => {
  const text = new TextDecoder().decode(pcm)
  return text.startsWith(UTTERANCE) ? text.slice(UTTERANCE.length) : undefined
}

const sleep = (d: Duration.Input | undefined) => (d === undefined ? Effect.void : Effect.sleep(d))

/**
 * A `RealtimeModel` answering by `options.rules` (first match wins), with the `ScriptedRealtime`
 * recorder. Use it to test realtime agents without a network; `utterance` makes audio its turn
 * detection hears.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<RealtimeModel | ScriptedRealtime> =>
  Layer.effectContext(
    Effect.gen(function*() {
      const capabilities = options.capabilities ?? openAiLike
      const connections: Array<ConnectionRecord> = []
      const faults = RealtimeFaults.make(options)
      let ids = options.firstId ?? 0
      const nextId = (prefix: string) => `${prefix}_${++ids}`

      const connect = (config: RealtimeSessionConfig): Effect.Effect<RealtimeConnection, RealtimeError, Scope.Scope> =>
        Effect.gen(function*() {
          yield* sleep(options.connectDelay)
          const scope = yield* Effect.scope
          const clock = yield* Effect.clockWith((c) => Effect.succeed(c))
          const events = yield* Queue.unbounded<RealtimeEvent, RealtimeError | Cause.Done>()
          const record: ConnectionRecord = {
            id: nextId("conn"),
            ops: [],
            items: config.chatContext.items.filter((i) => i._tag !== "AgentHandoff"),
            instructions: config.instructions,
            tools: config.tools.map((t) => t.name),
            closed: false,
            responses: []
          }
          connections.push(record)
          const log = (op: string, detail?: unknown) => record.ops.push({ op, at: clock.currentTimeMillisUnsafe(), detail })
          log("connect", { instructions: config.instructions })
          let response: Fiber.Fiber<void> | undefined
          /** The response being generated: every response asked for starts and ends once. */
          let current: { readonly id: string; started: boolean } | undefined
          yield* Scope.addFinalizer(scope, Effect.sync(() => {
            record.closed = true
            log("close")
            Queue.endUnsafe(events)
          }))
          const emit = (event: RealtimeEvent) => Queue.offer(events, event).pipe(Effect.asVoid)
          const closedError = () => new RealtimeError({ reason: "closed", message: `${record.id} is closed` })
          const live = <A>(op: () => Effect.Effect<A, RealtimeError>) =>
            Effect.suspend(() => (record.closed ? Effect.fail(closedError()) : op()))

          const ack = (kind: "session" | "context"): Effect.Effect<Ack> =>
            Effect.gen(function*() {
              const { n, rejected } = RealtimeFaults.nextUpdate(faults, kind)
              const done = yield* Deferred.make<void, RealtimeError>()
              yield* sleep(options.ackDelay).pipe(
                Effect.andThen(Effect.suspend(() => {
                  if (rejected) {
                    log("reject", { n, kind })
                    const { error, event } = RealtimeFaults.rejection(n)
                    return emit(event).pipe(Effect.andThen(Deferred.fail(done, error)))
                  }
                  return Deferred.succeed(done, undefined)
                })),
                Effect.forkIn(scope)
              )
              return { await: Deferred.await(done) }
            })

          // The server takes the request as it stands when `response.create` arrives (later
          // updates do not change it); the answer comes after `responseDelay`.
          const respond = (instructions: string | undefined, toolChoice: RealtimeToolChoice | undefined) =>
            Effect.gen(function*() {
              const prompt = toPrompt(ChatContext.make(record.items), { instructions: record.instructions, extraInstructions: instructions })
              const info = yield* ModelCall
              const request: ScriptedModel.RecordedRequest = {
                index: record.responses.length,
                agent: info?.agent,
                instructions: record.instructions,
                toolChoice: typeof toolChoice === "object" ? { tool: toolChoice.tool } : toolChoice ?? "auto",
                tools: record.tools,
                prompt,
                last: ScriptedModel.lastInput(prompt)
              }
              record.responses.push({ agent: info?.agent, instructions: record.instructions })
              const rule = options.rules.find((r) => ScriptedModel.matches(r.when, request))
              const reply = rule && (typeof rule.reply === "function" ? rule.reply(request) : rule.reply)
              return { rule, reply }
            })
          // The socket drops: nothing more comes, nothing more can be sent.
          const drop = (responseId: string) =>
            Effect.sync(() => {
              log("dropped", responseId)
              record.closed = true
              RealtimeFaults.dropEvents(events, record.id)
            })
          const stream = (responseId: string, answer: { readonly rule: unknown; readonly reply: ScriptedModel.ScriptedResponse | undefined }) =>
            Effect.gen(function*() {
              yield* sleep(options.responseDelay)
              current!.started = true
              yield* emit({ _tag: "ResponseStarted", responseId })
              const fate = RealtimeFaults.nextResponse(faults)
              const drops = fate === "drops"
              const fails = fate === "fails"
              const failed = emit(RealtimeFaults.failedResponse(responseId))
              const reply = answer.reply
              if (!reply) {
                return yield* emit({ _tag: "ResponseDone", responseId, status: "failed", error: "no scripted response" })
              }
              yield* sleep(reply.delay)
              const chunks = reply.text === undefined ? [] : typeof reply.text === "string" ? [reply.text] : reply.text
              const itemId = nextId("item")
              let said = ""
              if (drops && chunks.length === 0) return yield* drop(responseId)
              if (fails && chunks.length === 0) return yield* failed
              for (const [i, delta] of chunks.entries()) {
                if (i > 0) yield* sleep(reply.chunkDelay)
                if (options.audio) yield* emit({ _tag: "AudioDelta", responseId, itemId, pcm: new Uint8Array(480), sampleRate: 24000 })
                yield* emit({ _tag: options.audio ? "TranscriptDelta" : "TextDelta", responseId, itemId, delta })
                said += delta
                if (drops) return yield* drop(responseId)
                if (fails) return yield* failed
              }
              if (said) record.items.push({ _tag: "Message", id: itemId, role: "assistant", text: said, interrupted: false })
              for (const call of reply.toolCalls ?? []) {
                const callItem = nextId("item")
                const callId = call.id ?? nextId("call")
                const args = typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {})
                record.items.push({ _tag: "FunctionCall", id: callItem, callId, name: call.name, arguments: args })
                yield* emit({ _tag: "FunctionCall", responseId, itemId: callItem, callId, name: call.name, arguments: args })
              }
              yield* emit({ _tag: "ResponseDone", responseId, status: "completed", usage: reply.usage ?? { inputTokens: 0, outputTokens: 0 } })
            }).pipe(Effect.ensuring(Effect.sync(() => {
              if (current?.id === responseId) current = undefined
            })))

          // The server's turn detection: the user talking over an answer stops it; at the end of
          // the turn the transcript comes, then an answer (unless one is in progress).
          const hear = (text: string) =>
            Effect.gen(function*() {
              const speechEvents = options.speechEvents ?? true
              if (speechEvents) yield* emit({ _tag: "SpeechStarted" })
              const playing = current
              if (playing?.started && response && !response.pollUnsafe()) {
                log("interrupted", playing.id)
                yield* Fiber.interrupt(response)
                yield* emit({ _tag: "Interrupted", responseId: playing.id })
                yield* emit({ _tag: "ResponseDone", responseId: playing.id, status: "cancelled" })
              }
              yield* sleep(options.speechDuration ?? "200 millis")
              if (record.closed) return
              if (speechEvents) yield* emit({ _tag: "SpeechStopped" })
              const itemId = nextId("item")
              log("heard", text)
              record.items.push({ _tag: "Message", id: itemId, role: "user", text, interrupted: false })
              const transcript = RealtimeFaults.untranscribable(faults, text)
                ? emit({ _tag: "InputTranscript", itemId, text: "", final: true, failed: { message: "The audio could not be transcribed.", code: "audio_unintelligible" } })
                : Effect.suspend(() => {
                  // What came after the turn by the time it is transcribed (its answer, for a
                  // late transcript), as OpenAI's conversation shows it.
                  const index = record.items.findIndex((i) => i.id === itemId)
                  const followedBy = index < 0 ? [] : record.items.slice(index + 1).map((i) => i.id)
                  return emit({ _tag: "InputTranscript", itemId, text, final: true, followedBy })
                })
              if (options.transcriptDelay === undefined) yield* transcript
              else yield* sleep(options.transcriptDelay).pipe(Effect.andThen(transcript), Effect.forkIn(scope))
              if (response && !response.pollUnsafe()) return
              const id = nextId("resp")
              current = { id, started: false }
              const answer = yield* respond(undefined, undefined)
              response = yield* stream(id, answer).pipe(Effect.forkIn(scope))
            })

          return {
            id: record.id,
            provider: options.provider ?? "scripted",
            model: options.model ?? "scripted-realtime",
            capabilities,
            events: Stream.fromQueue(events),
            updateSession: (changes) =>
              live(() => {
                log("updateSession", changes)
                if (changes.instructions !== undefined && !capabilities.mutableInstructions) {
                  return Effect.fail(new RealtimeError({ reason: "unsupported", message: "instructions are fixed" }))
                }
                if (changes.tools !== undefined && !capabilities.mutableTools) {
                  return Effect.fail(new RealtimeError({ reason: "unsupported", message: "tools are fixed" }))
                }
                if (changes.instructions !== undefined) record.instructions = changes.instructions
                if (changes.tools !== undefined) record.tools = changes.tools.map((t) => t.name)
                return ack("session")
              }),
            updateChatContext: (context) =>
              live(() => {
                const wanted = context.items.filter((i) => i._tag !== "AgentHandoff")
                const keep = new Set(wanted.map((i) => i.id))
                const deleted = record.items.filter((i) => !keep.has(i.id)).map((i) => i.id)
                if (deleted.length > 0 && !capabilities.mutableChatContext) {
                  return Effect.fail(new RealtimeError({ reason: "unsupported", message: "items cannot be deleted" }))
                }
                const held = new Set(record.items.map((i) => i.id))
                const created = wanted.filter((i) => !held.has(i.id)).map((i) => i.id)
                log("updateChatContext", { deleted, created })
                record.items = wanted
                return ack("context")
              }),
            sendToolOutput: (output) => live(() => Effect.sync(() => log("sendToolOutput", output)).pipe(Effect.andThen(ack("context")))),
            createResponse: (opts) =>
              live(() =>
                Effect.gen(function*() {
                  log("createResponse", opts)
                  if (response && !response.pollUnsafe()) {
                    // The server started one by itself (its turn detection) an instant before:
                    // like OpenAI it refuses this one, and the one it started is the answer
                    // (it sees the same conversation), so the client takes that one instead.
                    if (current && !current.started) return void log("createResponse absorbed", current.id)
                    return yield* new RealtimeError({ reason: "rejected", message: "a response is already in progress" })
                  }
                  const id = nextId("resp")
                  current = { id, started: false }
                  if (RealtimeFaults.nextRequestStalls(faults)) {
                    log("stalled", id)
                    response = yield* Effect.never.pipe(Effect.forkIn(scope))
                    return
                  }
                  const answer = yield* respond(opts?.instructions, opts?.toolChoice)
                  response = yield* stream(id, answer).pipe(Effect.forkIn(scope))
                })
              ),
            cancelResponse: (responseId) => live(() =>
              Effect.gen(function*() {
                log("cancelResponse", responseId)
                // Like OpenAI: a cancel naming a response that is not the one in progress does nothing.
                if (responseId !== undefined && current?.id !== responseId) return void log("cancelResponse not active", responseId)
                const cut = current
                if (response) yield* Fiber.interrupt(response)
                // Like a real server: the response is created (if it was not yet) and ends cancelled.
                if (cut) {
                  if (!cut.started) yield* emit({ _tag: "ResponseStarted", responseId: cut.id })
                  yield* emit({ _tag: "ResponseDone", responseId: cut.id, status: "cancelled" })
                }
              })
            ),
            truncate: (itemId, audioEndMs) => live(() => Effect.sync(() => log("truncate", { itemId, audioEndMs }))),
            pushAudio: (pcm) =>
              live(() =>
                Effect.suspend(() => {
                  log("pushAudio", pcm.byteLength)
                  const text = heardText(pcm)
                  if (text === undefined || !capabilities.serverTurnDetection) return Effect.void
                  return hear(text).pipe(Effect.forkIn(scope), Effect.asVoid)
                })
              ),
            commitAudio: live(() => Effect.sync(() => log("commitAudio"))),
            clearAudio: live(() => Effect.sync(() => log("clearAudio")))
          } satisfies RealtimeConnection
        })

      const service = RealtimeModel.of({
        provider: options.provider ?? "scripted",
        model: options.model ?? "scripted-realtime",
        capabilities,
        connect
      })
      return Context.make(RealtimeModel, service).pipe(Context.add(ScriptedRealtime, { connections }))
    })
  )
