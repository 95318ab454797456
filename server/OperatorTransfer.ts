/**
 * Transfers to an operator (issue 35): a `Transferer` for `/ws` sessions whose person is an
 * operator connected to the desk (`/operator`). A transfer is an offer put to the operators
 * online (and to any who connect while it rings); the first to accept takes it (Answered), a
 * decline is Declined with their reason, and nobody answering within the ring timeout, nobody
 * online included, is NoAnswer. The desk's socket delivers offers with `connect` and answers with
 * `answer`; taking the floor after accepting is the desk's `take_over`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { randomUUID } from "node:crypto"
import { Clock, Deferred, Duration, Effect, Option, Queue, type Scope } from "effect"
import { CurrentAgent } from "../src/CurrentAgent.ts"
import * as Transfer from "../src/Transfer.ts"

/**
 * What an operator is offered: the transfer's id, who it is for (`to`: an operator's name, or
 * `any`), and the briefing of a warm transfer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Offer {
  readonly id: string
  readonly to: string
  readonly briefing: string | undefined
  /** The session the caller is on (the desk opens it on accept), when the transfer runs in one. */
  readonly session: string | undefined
  readonly kind: "cold" | "warm"
  /** When it started ringing (ms since the epoch) and for how long it rings. */
  readonly offeredAt: number
  readonly ringMs: number
}

interface Pending {
  readonly offer: Offer
  readonly done: Deferred.Deferred<Transfer.TransferOutcome>
}

/**
 * The operators online and the offers ringing.
 *
 * @since 0.1.0
 * @category models
 */
export interface OperatorLine {
  readonly online: Map<string, Queue.Queue<Offer>>
  readonly pending: Map<string, Pending>
}

/**
 * An operator line with no operator online and no transfer waiting.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): OperatorLine => ({ online: new Map(), pending: new Map() })

const isFor = (offer: Offer, name: string) => offer.to === "any" || offer.to === name

/**
 * Puts operator `name` online for the current Scope: the queue gets each offer meant for them,
 * those already ringing first.
 *
 * @since 0.1.0
 * @category operators
 */
export const connect = (line: OperatorLine, name: string): Effect.Effect<Queue.Dequeue<Offer>, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const offers = yield* Queue.unbounded<Offer>()
      for (const { offer } of line.pending.values()) if (isFor(offer, name)) yield* Queue.offer(offers, offer)
      line.online.set(name, offers)
      return offers
    }),
    () => Effect.sync(() => void line.online.delete(name))
  )

/**
 * Operator `name` accepts or declines offer `id`. `false` when it is no longer ringing (taken,
 * answered, timed out) or was not meant for them.
 *
 * @since 0.1.0
 * @category operators
 */
export const answer = (
  line: OperatorLine,
  name: string,
  id: string,
  accepted: boolean,
  reason?: string
): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    const pending = line.pending.get(id)
    if (pending === undefined || !isFor(pending.offer, name)) return Effect.succeed(false)
    line.pending.delete(id)
    // False when the ring timeout settled it first (its NoAnswer stands).
    return Deferred.succeed(
      pending.done,
      accepted
        ? Transfer.outcome("Answered", `${name} accepted`)
        : Transfer.outcome("Declined", reason === undefined || reason === "" ? `${name} declined` : `${name} declined: ${reason}`)
    )
  })

/**
 * How offer `id` ended (accepted, declined, unanswered, cancelled), once it has; `undefined` at
 * once when it is not ringing. The desk uses it to take an offer off the page.
 *
 * @since 0.1.0
 * @category operators
 */
export const settled = (line: OperatorLine, id: string): Effect.Effect<Transfer.TransferOutcome | undefined> =>
  Effect.suspend(() => {
    const pending = line.pending.get(id)
    return pending === undefined ? Effect.succeed(undefined) : Deferred.await(pending.done)
  })

/**
 * The `Transferer` that offers each transfer to the operators (see the module's comment).
 *
 * @since 0.1.0
 * @category constructors
 */
export const transferer = (line: OperatorLine): Transfer.TransfererService => ({
  transport: "operator",
  transfer: (request) =>
    Effect.gen(function*() {
      // Run by the transfer task, whose handle names the caller's session.
      const current = yield* Effect.serviceOption(CurrentAgent)
      const offer: Offer = {
        id: randomUUID(),
        to: request.to,
        briefing: request._tag === "Warm" ? request.briefing : undefined,
        session: Option.isSome(current) ? current.value.session.id : undefined,
        kind: request._tag === "Warm" ? "warm" : "cold",
        offeredAt: yield* Clock.currentTimeMillis,
        ringMs: Duration.toMillis(request.ringTimeout)
      }
      const done = yield* Deferred.make<Transfer.TransferOutcome>()
      line.pending.set(offer.id, { offer, done })
      for (const [name, offers] of line.online) if (isFor(offer, name)) yield* Queue.offer(offers, offer)
      // Whichever settles `done` first wins: an answer, the ring timeout, or the transfer cancelled.
      const unanswered = () => Transfer.outcome("NoAnswer", line.online.size === 0 ? "no operator online" : "no operator answered")
      return yield* Deferred.await(done).pipe(
        Effect.timeoutOrElse({
          duration: request.ringTimeout,
          orElse: () => Effect.suspend(() => Effect.andThen(Deferred.succeed(done, unanswered()), Deferred.await(done)))
        }),
        Effect.onInterrupt(() => Deferred.succeed(done, Transfer.outcome("Failed", "the transfer was cancelled"))),
        Effect.ensuring(Effect.sync(() => line.pending.delete(offer.id)))
      )
    })
})
