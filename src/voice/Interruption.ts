/**
 * The user's speech over a reply: it cuts the reply once it lasts `minInterruptionMs` with
 * `minInterruptionWords` words (barge-in); fewer words are held and said once the reply is over
 * (a backchannel); a cut whose speech brought no words is a false interruption, and the rest of
 * the cut reply is said (`resumeFalseInterruption`). Each decision is a `voice_decision` event.
 *
 * @since 0.1.0
 * @internal
 */
import { Effect } from "effect"
import { type InputState, newTurn, speaking, type Turn, wordCount, wordsOf } from "./InputState.ts"

/** Speech over a reply (`frameMs` more of it): it cuts once long enough and with enough words. */
export const bargeIn = (state: InputState, frameMs: number) =>
  Effect.gen(function*() {
    const barge = state.barge
    if (barge === undefined) return
    // the reply ended while the user was speaking over it: the floor is theirs now
    if (!state.output.playing()) {
      state.barge = undefined
      if (state.inUtterance) yield* speaking(state, true)
      return
    }
    if (!state.inUtterance) return
    barge.speechMs += frameMs
    const words = wordCount(wordsOf(state, state.current ?? newTurn(), true))
    if (barge.speechMs < state.config.interruptionMs || words < state.config.interruptionWords) return
    const speechMs = barge.speechMs
    state.barge = undefined
    if (state.current) state.current.cut = true
    yield* state.output.cut
    yield* speaking(state, true)
    yield* state.session.voiceDecision({ decision: "interruption", outcome: "cut", speechMs, words })
  })

/** Speech over a reply that ended without cutting it, and the turn's `text`: reported; true when
 * the words are too few to cut the reply still playing (a backchannel, "mm-hmm"), so they are
 * held until it is over. */
export const holdOverReply = (state: InputState, overReply: { readonly speechMs: number }, text: string) =>
  Effect.gen(function*() {
    const words = wordCount(text)
    yield* state.session.voiceDecision({ decision: "interruption", outcome: "ignored", speechMs: overReply.speechMs, words })
    const { interruptionWords } = state.config
    if (interruptionWords === 0 || words >= interruptionWords || !state.output.playing()) return false
    state.held.push(text)
    return true
  })

/** Words held over a reply go to the session (once it is over). */
export const flushHeld = (state: InputState) =>
  Effect.suspend(() => {
    const text = state.held.splice(0).join(" ")
    return text === "" ? Effect.void : state.session.send(text).pipe(Effect.ignore)
  })

/** A cut whose speech has brought no words for `falseInterruptionTimeoutMs`, its transcript still
 * awaited: a false interruption already. */
export const falseByTimeout = (state: InputState, turn: Turn) =>
  turn.cut && state.config.resumes && !turn.resumed && turn.texts.length === 0 && !state.inUtterance && turn.awaiting > 0 &&
  state.audioMs - turn.silenceFromMs >= state.config.falseTimeoutMs

/** A cut turn with no words: the rest of the cut reply is said (once). */
export const resumeCut = (state: InputState, turn: Turn) =>
  Effect.gen(function*() {
    if (!turn.cut || !state.config.resumes || turn.resumed) return
    turn.resumed = true
    const cut = state.output.lastCut()
    if (cut === undefined) return
    const rest = cut.text.startsWith(cut.heard) ? cut.text.slice(cut.heard.length).trim() : cut.text
    if (rest === "") return
    yield* state.session.voiceDecision({ decision: "false_interruption", outcome: "resumed", transcript: rest })
    yield* state.session.say(rest).pipe(Effect.ignore)
  })
