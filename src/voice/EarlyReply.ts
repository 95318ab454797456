/**
 * Preemptive generation: the holder's reply started on the user's words before the endpointing
 * silence confirms the turn is over (its model call is the longest wait of a turn). The reply
 * made ahead is used when the turn ends with those very words, and thrown away, unheard and
 * unrecorded, when the user goes on (`session.preemptive`; its first sentence is synthesized and
 * held by the output meanwhile, `VoiceOutput.speakAhead`).
 *
 * @since 0.1.0
 * @internal
 */
import { Effect } from "effect"
import * as Endpointing from "./Endpointing.ts"
import { type InputState, wordsOf } from "./InputState.ts"

/** The reply to `words`, started ahead of the turn's end; its first sentence is synthesized
 * as it comes and held by the output, unheard, until the turn is confirmed. */
export const startOn = (state: InputState, words: string) =>
  Effect.andThen(state.output.dropAhead, state.session.preemptive.start(words, state.output.speakAhead))

/** The reply made ahead is thrown away, and what was synthesized of it. */
export const discard = (state: InputState) => Effect.andThen(state.session.preemptive.discard, state.output.dropAhead)

/** The user goes on: a reply started for the turn is dropped. */
export const drop = (state: InputState) =>
  Effect.suspend(() => {
    state.ahead = undefined
    return discard(state)
  })

/** The engine heard the user pause after final words (`endOfSpeech`), before the VAD ended
 * the utterance: the holder's reply starts on them now; the endpointing silence still decides
 * whether the turn is over. */
export const startOnEndOfSpeech = (state: InputState) =>
  Effect.suspend(() => {
    const turn = state.current
    const { preemptive, minDelayMs, maxDelayMs } = state.config
    if (!preemptive || !state.inUtterance || turn === undefined || turn.done || turn.awaiting > 0) return Effect.void
    // not over a reply (a barge-in decides that speech), nor on words that trail off
    if (state.barge !== undefined || state.output.playing()) return Effect.void
    const words = wordsOf(state, turn, true)
    if (words === state.ahead || Endpointing.decide(words, false, minDelayMs, maxDelayMs).reason === "trailing_off") return Effect.void
    return Effect.map(startOn(state, words), (started) => {
      state.ahead = started ? words : undefined
    })
  })

/** A final that came during the turn's silence: the reply starts on the turn's words, unless it
 * was started on them already (by the engine's own end of speech). */
export const startOnFinal = (state: InputState, words: string, endpointAt: number) =>
  Effect.suspend(() => {
    if (!state.config.preemptive || words === "" || state.audioMs >= endpointAt || words === state.ahead) return Effect.void
    return Effect.map(startOn(state, words), (started) => {
      state.ahead = started ? words : undefined
    })
  })
