/**
 * A user's turn, assembled and ended: the VAD's speech start opens it (or continues it, when the
 * user goes on within its silence), the VAD's speech end hands the utterance to the engine and
 * starts the endpointing silence (`Endpointing.decide`: short when the words end a sentence or
 * answer the agent's question, long when they trail off; each decision a `voice_decision` event),
 * the finals join it, and once its silence is over with every final in, its words go to
 * `session.send`. A final that comes during the silence starts the reply ahead (`EarlyReply`).
 *
 * @since 0.1.0
 * @internal
 */
import { Effect } from "effect"
import type { SttEvent } from "../../services/Stt.ts"
import * as EarlyReply from "./EarlyReply.ts"
import * as Endpointing from "./Endpointing.ts"
import { type InputState, newTurn, type Pending, settled, speaking, type Turn, wordsOf } from "./InputState.ts"
import * as Interruption from "./Interruption.ts"
import * as Transcription from "./Transcription.ts"

/** The agent's last words asked a question (an answer may be short). */
const asked = (state: InputState) =>
  Effect.map(state.session.history, (history) => {
    const items = history.items
    for (let i = items.length - 1; i >= 0; i--) {
      const item = items[i]!
      if (item._tag === "Message" && item.role === "assistant") return item.text.trim().endsWith("?")
      if (item._tag === "Message" && item.role === "user") return false
    }
    return false
  })

/** Adaptive endpointing: the silence that ends `turn`, from its words so far (reported). */
const endpoint = (state: InputState, turn: Turn, words: string) =>
  Effect.gen(function*() {
    const decision = Endpointing.decide(words, yield* asked(state), state.config.minDelayMs, state.config.maxDelayMs)
    const at = turn.silenceFromMs + decision.delayMs
    if (at === turn.endpointAt && decision.reason === turn.reason) return
    turn.endpointAt = at
    turn.reason = decision.reason
    yield* state.session.voiceDecision({ decision: "endpointing", outcome: decision.reason, delayMs: decision.delayMs, transcript: words })
  })

/** The turn's silence is over and its words are in. */
export const sendDue = (state: InputState, turn: Turn) =>
  !turn.done && turn.awaiting === 0 && !(turn === state.current && state.inUtterance) &&
  (turn.force || (turn.endpointAt !== undefined && state.audioMs >= turn.endpointAt))

/** Sends the turn once its silence is over and its words are in (or says the rest of a reply
 * cut by speech that had none). */
export const maybeSend = (state: InputState, turn: Turn): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (!sendDue(state, turn)) return Effect.void
    turn.done = true
    state.ahead = undefined
    const overReply = turn === state.current ? state.barge : undefined
    if (turn === state.current) {
      state.current = undefined
      state.barge = undefined
    }
    // words held back earlier (a backchannel) go with this turn
    const text = [...state.held.splice(0), ...turn.texts].join(" ")
    return Effect.gen(function*() {
      // speech over a reply that ended without cutting it: its words, if any, are a turn
      if (overReply !== undefined && (yield* Interruption.holdOverReply(state, overReply, text))) return yield* EarlyReply.discard(state)
      if (text !== "") {
        yield* state.session.preemptive.commit(text)
        yield* state.session.send(text).pipe(Effect.ignore)
        return
      }
      yield* EarlyReply.discard(state)
      yield* Interruption.resumeCut(state, turn)
    }).pipe(
      // Only once the turn has reached the session (or been dropped): an input that ended
      // waits for this, so a following `session.idle` sees the turn.
      Effect.ensuring(Effect.sync(() => {
        if (settled(state)) state.onSettled?.()
      }))
    )
  })

/** Finals join their turn, which is sent once its silence is over; interims may cut a reply
 * (their words) or drop a reply started ahead (the user goes on). */
const onTranscript = (state: InputState, event: SttEvent): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (event._tag === "Interim") {
      state.interim = event.text.trim()
      if (event.text !== "") yield* state.session.transcribed(event.text, false)
      // the words speech over a reply needed may be these
      if (state.barge !== undefined && state.inUtterance) yield* Interruption.bargeIn(state, 0)
      // words beyond those a reply was started on: the user goes on
      if (state.ahead !== undefined && state.inUtterance && state.current !== undefined && wordsOf(state, state.current, true) !== state.ahead) {
        yield* EarlyReply.drop(state)
      }
      if (event.endOfSpeech === true) yield* EarlyReply.startOnEndOfSpeech(state)
      return
    }
    const entry = state.pending.shift()
    if (entry === undefined) return
    const turn = entry.turn
    turn.awaiting--
    const text = event.text.trim()
    if (turn === state.current && !state.inUtterance) state.interim = ""
    if (text !== "") {
      turn.texts.push(text)
      yield* state.session.transcribed(text, true)
    }
    // the final's words decide the silence (an interim may have been wrong), even when the
    // silence decided on the interim is already over
    const waiting = turn === state.current && !state.inUtterance && turn.awaiting === 0 && !turn.force && turn.endpointAt !== undefined
    if (waiting) {
      yield* endpoint(state, turn, wordsOf(state, turn, false))
      // (one started on the engine's own end of speech for these very words goes on)
      yield* EarlyReply.startOnFinal(state, turn.texts.join(" "), turn.endpointAt!)
    }
    yield* maybeSend(state, turn)
  })

/** What the speech-to-text stream's transcripts and losses mean for the turn. */
export const handlers: Transcription.Handlers = {
  onEvent: onTranscript,
  onLost: (state: InputState, entry: Pending) => maybeSend(state, entry.turn)
}

/** Speech started at `atMs`, heard in the frame that began at `frameStartMs`. */
export const speechStarted = (state: InputState, atMs: number, frameStartMs: number) =>
  Effect.gen(function*() {
    const current = state.current
    const goesOn = current !== undefined && !current.done && !current.force &&
      (current.endpointAt === undefined || state.audioMs < current.endpointAt)
    if (goesOn) {
      // the user goes on: the turn waits for a new silence, a reply started for it is dropped
      current.endpointAt = undefined
      yield* EarlyReply.drop(state)
    } else {
      yield* Transcription.followHolder(state, handlers)
      state.current = newTurn()
      state.barge = undefined
    }
    state.inUtterance = true
    state.interim = ""
    for (const held of state.preRoll) if (held.atMs >= atMs - state.config.preRollMs) yield* Transcription.hear(state, held.frame)
    state.preRoll.length = 0
    // (the frame it was heard in is counted by `bargeIn`)
    if (state.barge !== undefined) state.barge.speechMs += Math.max(0, frameStartMs - atMs)
    else if (state.output.playing()) state.barge = { speechMs: Math.max(0, frameStartMs - atMs) }
    else yield* speaking(state, true)
  })

/** The VAD heard the speech end at `atMs`: the engine decodes the utterance now, while the
 * endpointing silence runs. */
export const speechEnded = (state: InputState, atMs: number) =>
  Effect.gen(function*() {
    state.inUtterance = false
    const turn = state.current ?? (state.current = newTurn())
    const entry: Pending = { turn, audio: state.utterance }
    state.utterance = []
    state.pending.push(entry)
    turn.awaiting++
    turn.silenceFromMs = atMs
    yield* endpoint(state, turn, wordsOf(state, turn, true))
    // A failed stream's successor gets it (`reopen`).
    if (!state.listening.failed) yield* Transcription.ended(state, entry, handlers)
  })

/** Speech the VAD has not ended (the input ended, or went quiet): it ends here, and its turn
 * waits for no silence. */
export const endNow = (state: InputState) =>
  Effect.gen(function*() {
    if (state.inUtterance) {
      yield* speaking(state, false)
      yield* speechEnded(state, state.audioMs)
    }
    if (state.current !== undefined) {
      state.current.force = true
      yield* maybeSend(state, state.current)
    }
    if (state.current === undefined) yield* Interruption.flushHeld(state)
  })
