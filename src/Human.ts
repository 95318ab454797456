/**
 * A person as a holder of the floor. When a session passes the floor to a human (an operator's
 * take-over), no model speaks or is called: the caller's words go to the human (`heard`), the
 * human's words (`say`) go to the caller's output, and both are recorded in the session's
 * history, so the agent the floor is handed back to knows what was said.
 *
 * ```ts
 * const operator = yield* Human.make({ name: "operator" })
 * yield* session.takeOver(operator)           // the agent stops at once and says nothing more
 * yield* operator.say("Hi, this is Sam from the front desk.")
 * const words = yield* Stream.take(operator.heard, 1).pipe(Stream.runCollect)
 * yield* session.handBack(frontDesk, { note: "The caller wants a room for two nights." })
 * ```
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Deferred, Effect, Queue, Stream } from "effect"
import { FloorError } from "./Errors.ts"
import type { HumanInner, HumanWords } from "./internal/HumanFloor.ts"

export type { HumanWords } from "./internal/HumanFloor.ts"

/**
 * A person who can hold a session's floor. One value per person: it can hold the floor of one
 * session at a time.
 *
 * @since 0.1.0
 * @category models
 */
export interface Human {
  readonly _tag: "Human"
  readonly name: string
  /** What callers say while this human holds their session's floor, in order. */
  readonly heard: Stream.Stream<HumanWords>
  /** Says `text` to the caller of the session this human holds the floor of (recorded in its
   * history as this human's words); fails with `FloorError` when it holds none. With `voiced`,
   * the caller heard the words in the human's own voice: they are recorded, not said again. */
  readonly say: (text: string, options?: SayOptions) => Effect.Effect<void, FloorError>
  /** The id of the session whose floor this human holds, if any. */
  readonly holding: () => string | undefined
  /** The session's side of it (internal/HumanFloor.ts). */
  readonly inner: HumanInner
}

/**
 * Options of `Human.say`.
 *
 * @since 0.1.0
 * @category models
 */
export interface SayOptions {
  /** The words are a transcript of what the caller already heard (an operator's microphone). */
  readonly voiced?: boolean | undefined
}

/**
 * Options of `make`.
 *
 * @since 0.1.0
 * @category models
 */
export interface MakeOptions {
  /** How the history and events name this human (as an agent's name does). */
  readonly name: string
}

/**
 * Makes a human floor holder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: MakeOptions): Effect.Effect<Human> =>
  Effect.map(Queue.unbounded<HumanWords>(), (outbox) => {
    const inner: HumanInner = { outbox, seat: undefined }
    const human: Human = {
      _tag: "Human",
      name: options.name,
      heard: Stream.fromQueue(outbox),
      say: (text, sayOptions) =>
        Effect.suspend(() => {
          const seat = inner.seat
          if (!seat || seat.core.closed()) {
            return Effect.fail(new FloorError({ agent: options.name, reason: "not_holder", message: `${options.name} does not hold the floor of any session` }))
          }
          return Effect.flatMap(Deferred.make<void, FloorError>(), (reply) => {
            seat.core.send({ _tag: "HumanSay", human, text, voiced: sayOptions?.voiced === true, reply })
            return Deferred.await(reply)
          })
        }),
      holding: () => inner.seat?.core.id,
      inner
    }
    return human
  })

/**
 * Whether a value is a `Human`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isHuman = (u: unknown): u is Human => typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "Human"
