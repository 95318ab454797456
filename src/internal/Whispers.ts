/**
 * Whispers: text only an agent sees, as instructions for its next reply (an operator's whisper,
 * the note of a hand back from a human). Kept per actor until a reply takes them; not recorded
 * in any context, as `ReplyOptions.instructions` is not.
 */
import type { ReplyOptions } from "../CurrentAgent.ts"
import type { Actor } from "./actor/Actor.ts"

const pending = new WeakMap<Actor, Array<string>>()

/** `text` goes with the next reply `actor` starts. */
export const add = (actor: Actor, text: string): void => {
  const list = pending.get(actor)
  if (list) list.push(text)
  else pending.set(actor, [text])
}

/** The reply's options with the whispers waiting for it, which it takes. */
export const take = (actor: Actor, options: ReplyOptions): ReplyOptions => {
  const list = pending.get(actor)
  if (!list) return options
  pending.delete(actor)
  const instructions = [options.instructions, ...list].filter((text) => text !== undefined && text !== "").join("\n\n")
  return { ...options, instructions }
}
