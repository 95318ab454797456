/**
 * What the user said that the realtime server has not answered yet, kept per session (on the
 * realtime pool), not by the agent that heard it: the server's answer, or the transcript of a
 * turn already answered, may come after the floor and the connection have moved on (seed
 * 420778). A transcript may come before the server's answer to its turn, or after it
 * (OpenAI transcribes on its own time).
 */

export interface Words {
  readonly text: string
  readonly itemId: string
}

export interface Unanswered {
  /** The last transcript no server answer has claimed yet (it came first). */
  last: Words | undefined
  /** Turns passed on to the next holder before their transcript came: the next transcripts are
   * theirs. */
  owed: number
}

export const make = (): Unanswered => ({ last: undefined, owed: 0 })

/** A transcript no held turn of the hearing agent waits for: the words of a turn passed on
 * without them (returned: they go to the holder as the user's input), or kept for the answer.
 * `undefined`: the server could not transcribe the turn; it settles a debt all the same (the
 * next transcript is a newer turn's, which the server answers by itself). */
export const transcribed = (u: Unanswered, words: Words | undefined): Words | undefined => {
  if (u.owed > 0) {
    u.owed--
    return words
  }
  u.last = words
  return undefined
}

/** The server answers a turn by itself: its words, if their transcript came first. */
export const claim = (u: Unanswered): Words | undefined => {
  const words = u.last
  u.last = undefined
  return words
}

/** A held turn without words is passed on: its transcript, when it comes, is the holder's. */
export const owe = (u: Unanswered): void => {
  u.owed++
}
