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
import { Deferred, Effect, Queue, type Scope } from "effect"
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
    return Deferred.succeed(
      pending.done,
      accepted
        ? Transfer.outcome("Answered", `${name} accepted`)
        : Transfer.outcome("Declined", reason === undefined || reason === "" ? `${name} declined` : `${name} declined: ${reason}`)
    )
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
      const offer: Offer = { id: randomUUID(), to: request.to, briefing: request._tag === "Warm" ? request.briefing : undefined }
      const done = yield* Deferred.make<Transfer.TransferOutcome>()
      line.pending.set(offer.id, { offer, done })
      for (const [name, offers] of line.online) if (isFor(offer, name)) yield* Queue.offer(offers, offer)
      return yield* Deferred.await(done).pipe(
        Effect.timeoutOrElse({
          duration: request.ringTimeout,
          orElse: () =>
            Effect.succeed(Transfer.outcome("NoAnswer", line.online.size === 0 ? "no operator online" : "no operator answered"))
        }),
        Effect.ensuring(Effect.sync(() => line.pending.delete(offer.id)))
      )
    })
})
