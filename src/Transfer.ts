/**
 * Handing the caller to a person (issue 35): `Transfer.cold(to)` and `Transfer.warm({ to,
 * briefing })` are `AgentTask`s. A tool runs one with `AgentTask.run` and gets a typed
 * `TransferOutcome` once the transport knows it (never before): `Answered`, `Busy`, `NoAnswer`,
 * `Voicemail`, `Declined` or `Failed`, each with the provider's reason. While it runs the task
 * holds the floor (lent by the caller's agent), so no agent replies over the ringing; on any
 * outcome but `Answered` the floor goes back to the agent that ran it, and `Transfer.describe`
 * gives the tool output that tells its model what happened.
 *
 * ```ts
 * const transfer = Tool.make("transfer_to_sales", {
 *   description: "Transfer the caller to a sales person",
 *   handler: () =>
 *     AgentTask.run(Transfer.warm({ to: "+15105550100", briefing: "Jane wants a quote for 12 seats." }))
 *       .pipe(Effect.map(Transfer.describe))
 * })
 * ```
 *
 * The transport does the dialing: a `Transferer` service (Twilio's REST API, LiveKit SIP, an
 * operator on `/operator`) provided with the session. A ring timeout is honoured here as well as
 * by the provider: if no outcome came `ringTimeout` plus a grace of five seconds after the dial
 * (Twilio adds about five seconds to its own), plus `acceptTimeout` for a warm transfer's
 * briefing, the outcome is `NoAnswer` (the transport's work is interrupted).
 *
 * Across a crash (a durable session resumed while the task held the floor, its `onEnter`
 * dialing or waiting), the task's `onRestore` asks the transport for the outcome it kept
 * (`TransfererService.restore`), with the same ring timeout counted from the resume; a transport
 * that kept none makes it `Failed`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, Duration, Effect } from "effect"
import * as AgentTask from "./AgentTask.ts"
import { CurrentAgent } from "./CurrentAgent.ts"

/**
 * The person took the call: the caller is connected to them and the agent leaves.
 *
 * @since 0.1.0
 * @category models
 */
export interface Answered {
  readonly _tag: "Answered"
  readonly reason: string
}

/**
 * The line was busy (SIP 486/600, Twilio `busy`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Busy {
  readonly _tag: "Busy"
  readonly reason: string
}

/**
 * Nobody picked up within the ring timeout (SIP 480/408, Twilio `no-answer`).
 *
 * @since 0.1.0
 * @category models
 */
export interface NoAnswer {
  readonly _tag: "NoAnswer"
  readonly reason: string
}

/**
 * A machine answered (Twilio `AnsweredBy=machine_*`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Voicemail {
  readonly _tag: "Voicemail"
  readonly reason: string
}

/**
 * The person refused the call (SIP 603, or declined after the briefing of a warm transfer).
 *
 * @since 0.1.0
 * @category models
 */
export interface Declined {
  readonly _tag: "Declined"
  readonly reason: string
}

/**
 * The transfer could not be made (unroutable number, provider error, canceled dial).
 *
 * @since 0.1.0
 * @category models
 */
export interface Failed {
  readonly _tag: "Failed"
  readonly reason: string
}

/**
 * How a transfer ended, with the provider's reason (its status, SIP code or error message).
 *
 * @since 0.1.0
 * @category models
 */
export type TransferOutcome = Answered | Busy | NoAnswer | Voicemail | Declined | Failed

/**
 * Makes an outcome: `Transfer.outcome("Busy", "sip status 486: Busy Here")`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const outcome = <Tag extends TransferOutcome["_tag"]>(_tag: Tag, reason: string): Extract<TransferOutcome, { _tag: Tag }> =>
  ({ _tag, reason }) as Extract<TransferOutcome, { _tag: Tag }>

/**
 * What the transport is asked to do. A cold transfer hands the call over blind; a warm one holds
 * the caller (hold audio), briefs the person, and connects them only if the person accepts.
 *
 * @since 0.1.0
 * @category models
 */
export type TransferRequest =
  | { readonly _tag: "Cold"; readonly to: string; readonly ringTimeout: Duration.Duration }
  | {
    readonly _tag: "Warm"
    readonly to: string
    readonly ringTimeout: Duration.Duration
    /** What the person is told (or shown) before they accept. */
    readonly briefing: string
    /** Played to the caller while on hold (a URL the transport can play); the transport's default otherwise. */
    readonly holdAudio?: string | undefined
    /** How long the person may take, once they picked up, to hear the briefing and accept. */
    readonly acceptTimeout: Duration.Duration
  }

/**
 * A transport's way of transferring the call the session is on. `transfer` returns once the
 * outcome is known; what it cannot do is a `Failed` outcome, never an error.
 *
 * @since 0.1.0
 * @category models
 */
export interface TransfererService {
  /** Which transport this is ("twilio", "livekit-sip", "operator", ...). */
  readonly transport: string
  readonly transfer: (request: TransferRequest) => Effect.Effect<TransferOutcome>
  /**
   * The outcome of the transfer this session had in flight when its process died (the session
   * was resumed with the transfer's task holding the floor): read from where the transport kept
   * it (Twilio's: the transfer's record in the session store), waiting for it as `transfer` does
   * when it is not known yet. A transport that keeps nothing across a process leaves it out: the
   * outcome is then `Failed`.
   */
  readonly restore?: ((request: TransferRequest, sessionId: string) => Effect.Effect<TransferOutcome>) | undefined
}

/**
 * The transfer service of the call the session is on, provided by its transport.
 *
 * @since 0.1.0
 * @category services
 */
export class Transferer extends Context.Service<Transferer, TransfererService>()("baton/Transferer") {}

/** The grace added to the ring timeout before baton itself calls it `NoAnswer`. */
const GRACE = Duration.seconds(5)

/**
 * Options common to both kinds: the task's name and the ring timeout (default 30 seconds, Twilio's).
 *
 * @since 0.1.0
 * @category models
 */
export interface ColdOptions {
  readonly name?: string
  readonly ringTimeout?: Duration.Input
}

/**
 * The options of `warm`: the person, the briefing they get, and the hold audio.
 *
 * @since 0.1.0
 * @category models
 */
export interface WarmOptions extends ColdOptions {
  readonly to: string
  readonly briefing: string
  readonly holdAudio?: string
  /** Time for the briefing and the answer after the person picks up (default 60 seconds). */
  readonly acceptTimeout?: Duration.Input
}

/** What a transport that keeps nothing across a process tells a resumed transfer. */
const LOST = "the process running the transfer stopped and the transport kept no record of its outcome"

const runRequest = (task: AgentTask.AgentTask<TransferOutcome, Transferer>, request: TransferRequest, restored: boolean) =>
  Effect.gen(function*() {
    const transferer = yield* Transferer
    const wait = restored
      ? transferer.restore?.(request, (yield* CurrentAgent).session.id) ?? Effect.succeed(outcome("Failed", LOST))
      : transferer.transfer(request)
    // After a restart the ring timeout is counted again from the resume: the outcome comes by
    // then, or it is NoAnswer (never a hang).
    const result = yield* wait.pipe(
      Effect.timeoutOrElse({
        // A warm transfer also waits while the picked-up person hears the briefing and answers.
        duration: Duration.sum(Duration.sum(request.ringTimeout, GRACE), request._tag === "Warm" ? request.acceptTimeout : Duration.zero),
        orElse: () =>
          Effect.succeed(outcome("NoAnswer", `no outcome within the ring timeout (${Duration.format(request.ringTimeout)})`))
      })
    )
    yield* AgentTask.complete(task, result)
  })

const makeTask = (name: string, request: TransferRequest): AgentTask.AgentTask<TransferOutcome, Transferer> => {
  const task: AgentTask.AgentTask<TransferOutcome, Transferer> = AgentTask.make<TransferOutcome, [], unknown, unknown, unknown, never, unknown, never, unknown>({
    name,
    instructions: "A transfer is in progress: say nothing until it ends.",
    // Only the function call's output goes back into the caller's context.
    context: "none",
    onEnter: Effect.suspend(() => runRequest(task, request, false)),
    // The process died while it dialed or waited: the outcome is read from where the transport
    // kept it, once, and the caller's tool call gets it.
    onRestore: Effect.suspend(() => runRequest(task, request, true))
  }) as AgentTask.AgentTask<TransferOutcome, Transferer>
  return task
}

/**
 * A cold (blind) transfer to `to` (a phone number, SIP URI or operator name, as the transport
 * takes it). The task's result is the outcome.
 *
 * @since 0.1.0
 * @category constructors
 */
export const cold = (to: string, options: ColdOptions = {}): AgentTask.AgentTask<TransferOutcome, Transferer> =>
  makeTask(options.name ?? "cold_transfer", {
    _tag: "Cold",
    to,
    ringTimeout: Duration.fromInputUnsafe(options.ringTimeout ?? "30 seconds")
  })

/**
 * A warm transfer: the caller is held, the person is briefed and then connected if they accept.
 *
 * @since 0.1.0
 * @category constructors
 */
export const warm = (options: WarmOptions): AgentTask.AgentTask<TransferOutcome, Transferer> =>
  makeTask(options.name ?? "warm_transfer", {
    _tag: "Warm",
    to: options.to,
    ringTimeout: Duration.fromInputUnsafe(options.ringTimeout ?? "30 seconds"),
    briefing: options.briefing,
    holdAudio: options.holdAudio,
    acceptTimeout: Duration.fromInputUnsafe(options.acceptTimeout ?? "60 seconds")
  })

/**
 * The tool output that tells the model how the transfer ended and what to do now.
 *
 * @since 0.1.0
 * @category utils
 */
export const describe = (result: TransferOutcome): string => {
  switch (result._tag) {
    case "Answered":
      return `The transfer was answered (${result.reason}); the caller is with the person now.`
    case "Busy":
      return `The transfer failed: the line was busy (${result.reason}). Tell the caller and offer another way to help.`
    case "NoAnswer":
      return `The transfer failed: nobody answered (${result.reason}). Tell the caller and offer another way to help.`
    case "Voicemail":
      return `The transfer reached voicemail (${result.reason}), so it was not connected. Tell the caller and offer another way to help.`
    case "Declined":
      return `The person declined the transfer (${result.reason}). Tell the caller and offer another way to help.`
    case "Failed":
      return `The transfer could not be made (${result.reason}). Tell the caller and offer another way to help.`
  }
}
