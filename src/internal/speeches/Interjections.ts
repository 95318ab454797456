/**
 * The interjection: a `say` or a reply queued while the playing speech waits for its tools ("One
 * moment, connecting you to verification.", a goodbye the tool awaits before it hangs up) is
 * spoken right away, while the tools run, so that it is heard before what they lead to (an
 * `AgentTask`'s first words, a handoff, the tool's own output) rather than after (rules 2, 6 and
 * 10). An interjected reply may call tools in turn, whose words interject over it: the playing
 * speeches form a stack, and only its top may be generating. A speech generates again only once
 * every interjection above it ended, and a batch that passes the floor passes it only then: one
 * voice at a time, nothing lost.
 */
import { Effect } from "effect"
import * as Speech from "../../Speech.ts"
import { awaitEnd, tokenOf } from "./Parking.ts"
import { interjectsOver, type Speeches, stack, stackIndex } from "./State.ts"

const none: ReadonlyArray<Speech.Speech> = []

/** The playing speeches under `speech`, bottom first (those it interjects over). */
export const under = (speeches: Speeches, speech: Speech.Speech): ReadonlyArray<Speech.Speech> => {
  const s = speeches.state
  // Nothing is under a speech unless speeches play over one another (not on a handoff's path).
  return s.interjections.length === 0 ? none : stack(s).slice(0, Math.max(0, stackIndex(s, speech))).map((entry) => entry.queued.speech)
}

/**
 * `speech`'s batch settled and passes the floor once what is said over it ended: no new reply
 * may start over it, and those playing over it make no further model call (their follow-ups are
 * cut, as a barge-in cuts them): the agent's model is done once the handoff is decided.
 */
export const startPassing = (speeches: Speeches, speech: Speech.Speech): void => {
  const s = speeches.state
  Speech.passing(speech)
  const index = stackIndex(s, speech)
  if (index < 0) return
  // The interjections over it: from the one right above (stack index + 1) to the top.
  for (let i = s.current ? index : index + 1; i < s.interjections.length; i++) Speech.cutFollowUp(s.interjections[i]!.queued.speech)
}

/** The interjection directly over `speech`, or one queued to start over it. */
const interjectionOver = (speeches: Speeches, speech: Speech.Speech): Speech.Speech | undefined => {
  const s = speeches.state
  const index = stackIndex(s, speech)
  if (index < 0) return undefined
  const above = s.interjections[s.current ? index : index + 1]
  if (above) return above.queued.speech
  return speeches.config.mayStart() ? s.queue.find(interjectsOver(speech))?.speech : undefined
}

/** Whether an interjection over `speech` is being spoken or about to start (a cheap check
 * before waiting). */
export const interjectingOver = (speeches: Speeches, speech: Speech.Speech): boolean => interjectionOver(speeches, speech) !== undefined

/** Waits out the interjections over `speech`, and one queued to start (the actor's loop starts
 * it next). Its work token is parked on the interjection meanwhile: what is said over it may
 * run a task that waits for the user, and the session is quiet then. */
export const interjectedOver = (speeches: Speeches, speech: Speech.Speech): Effect.Effect<void> =>
  Effect.suspend(() => {
    const speaking = interjectionOver(speeches, speech)
    if (!speaking) return Effect.void
    speeches.config.kick()
    return awaitEnd(speeches, speaking, tokenOf(speech)).pipe(Effect.andThen(interjectedOver(speeches, speech)))
  })
