/**
 * The speech-to-text stream of the voice input: opened with the floor holder's options (a handoff
 * may change the language, so a new one is opened at an utterance's start once nothing is being
 * decoded), each utterance's audio kept until its transcript comes, and a stream that fails (a
 * dropped socket) replaced by a new one that is given again what the old one had not answered:
 * the utterances awaiting their transcript, then the one in progress. One that cannot be opened is
 * tried again after a second of audio.
 *
 * What the transcripts mean for the turn is the caller's (`Handlers`, from `TurnTaking`), so this
 * module knows nothing of turns.
 *
 * @since 0.1.0
 * @internal
 */
import { Effect, Exit, Option, Scope, Stream } from "effect"
import type * as AudioFrame from "../../services/AudioFrame.ts"
import type { SttEvent, SttOptions, SttService } from "../../services/Stt.ts"
import type { VoiceError } from "../../services/VoiceError.ts"
import type { AgentSession } from "../AgentSession.ts"
import { type Config, guard, type InputState, type Pending, type SttLink } from "./InputState.ts"

/** What the caller does with a transcript, and with an utterance the engine failed on (no
 * transcript will come for it). */
export interface Handlers {
  readonly onEvent: (state: InputState, event: SttEvent) => Effect.Effect<void>
  readonly onLost: (state: InputState, entry: Pending) => Effect.Effect<void>
}

/** The transcripts of `stt`, handed on in order; a stream that fails is replaced at the next
 * frame (`reopen`). */
const transcripts = (state: InputState, stt: SttLink, handlers: Handlers) =>
  stt.stream.events.pipe(
    Stream.catch((error) =>
      Stream.fromEffect(Effect.andThen(Effect.sync(() => {
        stt.failed = true
      }), state.onError(error))).pipe(Stream.drain)
    ),
    Stream.runForEach((event) => handlers.onEvent(state, event))
  )

/** A stream with its own Scope (forked from `runScope`), its transcripts not yet listened to. */
export const connect = (sttService: SttService, runScope: Scope.Scope, options: SttOptions | undefined): Effect.Effect<SttLink, VoiceError> =>
  Effect.gen(function*() {
    const scope = yield* Scope.fork(runScope)
    const stream = yield* sttService.stream(options).pipe(
      Scope.provide(scope),
      Effect.onError(() => Scope.close(scope, Exit.void))
    )
    return { stream, scope, options, failed: false }
  })

/** The transcripts of `link` handed on, in its Scope: they keep coming after the input ends. */
export const listen = (state: InputState, link: SttLink, handlers: Handlers) =>
  transcripts(state, link, handlers).pipe(Effect.forkIn(link.scope), Effect.asVoid)

const open = (state: InputState, options: SttOptions | undefined, handlers: Handlers): Effect.Effect<SttLink, VoiceError> =>
  Effect.tap(connect(state.sttService, state.runScope, options), (link) => listen(state, link, handlers))

/** A stream, or none when it cannot be opened: reported, and tried again a second of audio later. */
const tryOpen = (state: InputState, options: SttOptions | undefined, handlers: Handlers): Effect.Effect<Option.Option<SttLink>> =>
  open(state, options, handlers).pipe(
    Effect.map(Option.some),
    Effect.catch((error) =>
      Effect.andThen(Effect.sync(() => {
        state.reopenAtMs = state.audioMs + 1000
      }), Effect.as(state.onError(error), Option.none<SttLink>()))
    )
  )

/** The agent holding the floor's STT options. */
export const wanted = (session: AgentSession<any>, config: Config) =>
  Effect.map(session.currentAgent, (agent) => (agent && config.sttByAgent?.[agent.name]) ?? config.stt)

/** At an utterance's start, after a handoff: the new holder's options, once nothing is being decoded. */
export const followHolder = (state: InputState, handlers: Handlers) =>
  Effect.gen(function*() {
    const next = yield* wanted(state.session, state.config)
    if (next === state.listening.options || state.pending.length > 0) return
    yield* Scope.close(state.listening.scope, Exit.void)
    // One that cannot be opened is tried again like a failed one (`reopen`).
    const fresh = yield* tryOpen(state, next, handlers)
    state.listening = Option.isSome(fresh) ? fresh.value : { ...state.listening, options: next, failed: true }
  })

/** A frame of the utterance in progress, to the engine (kept until its transcript comes). */
export const hear = (state: InputState, frame: AudioFrame.AudioFrame) => {
  state.utterance.push(frame)
  return state.listening.failed ? Effect.void : Effect.catch(state.listening.stream.push(frame), state.onError)
}

/** Tells the engine an utterance ended; no transcript comes for one it failed on. */
export const ended = (state: InputState, entry: Pending, handlers: Handlers) =>
  Effect.gen(function*() {
    const ok = yield* guard(state, Effect.as(state.listening.stream.endUtterance, true), false)
    if (ok) return
    state.pending.splice(state.pending.indexOf(entry), 1)
    entry.turn.awaiting--
    yield* handlers.onLost(state, entry)
  })

/** A new stream for a failed one, given again what the old one had not answered. */
export const reopen = (state: InputState, handlers: Handlers) =>
  Effect.gen(function*() {
    const failed = state.listening
    yield* Scope.close(failed.scope, Exit.void)
    const fresh = yield* tryOpen(state, failed.options, handlers)
    if (Option.isNone(fresh)) return
    state.listening = fresh.value
    for (const entry of [...state.pending]) {
      for (const frame of entry.audio) yield* guard(state, state.listening.stream.push(frame), undefined)
      yield* ended(state, entry, handlers)
    }
    for (const frame of state.utterance) yield* guard(state, state.listening.stream.push(frame), undefined)
  })
