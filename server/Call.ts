/**
 * A caller's session apart from the socket it came on: the socket may go (a train tunnel, a
 * laptop lid, a deploy) and another come back to the same session with its resume token. While
 * no client is attached the session goes on (a reply in progress finishes; what the agents say
 * is in the history the next client gets) and its audio goes nowhere; after `resumeSeconds`
 * without a client the session is closed. One client at a time: a later one takes the call over
 * and the earlier one is told so (`superseded`).
 *
 * Resume tokens are refreshed while a client is attached (every half of `resumeSeconds`), each
 * valid for twice `resumeSeconds`: whenever the client goes, the last token it got is good for
 * the whole grace period, so the live registry (or the store, later) has the last word on
 * whether the session can still be resumed, and the token's expiry only bounds how long a
 * stolen one is worth anything.
 */
import { Clock, Deferred, Effect, type Fiber, type Redacted, type Scope, Stream } from "effect"
import type { AudioOutputService } from "../services/AudioOutput.ts"
import { CallControlError, type CallControlService, noDtmf } from "../services/CallControl.ts"
import type { TextOutputService } from "../services/TextOutput.ts"
import type { SessionEvent } from "../src/index.ts"
import * as Transfer from "../src/Transfer.ts"
import type { ConnectionContext } from "./Connection.ts"
import { type TurnGate, turnGate } from "./Limits.ts"
import * as Line from "./Line.ts"
import * as Token from "./Token.ts"
import * as Transfers from "./Transfers.ts"

/** One socket attached to a call: where the session's output goes while it is attached. */
export interface Client {
  readonly audio: AudioOutputService
  /** The agents' words as they stream (the /ws page); none for a phone line. */
  readonly text?: TextOutputService | undefined
  readonly event: (event: SessionEvent) => Effect.Effect<void>
  /** A fresh resume token for this client. */
  readonly token: (token: Token.ResumeToken) => Effect.Effect<void>
  /** On a drain that moves sessions: tells the client to come back elsewhere with this token, and closes it. */
  readonly move?: ((token: Token.ResumeToken) => Effect.Effect<void>) | undefined
  /** Completed when another connection took the call over. */
  readonly superseded: Deferred.Deferred<void>
  /** Cuts this client's socket as a network failure would (code 1011): the call waits for it. */
  readonly drop?: Effect.Effect<void> | undefined
  /** What the transport does on the agent's hang-up before the call ends (Twilio's REST API). */
  readonly hangUp?: ((reason: string) => Effect.Effect<void, CallControlError>) | undefined
  /** Presses keys on the call; absent: this transport has no keypad. */
  readonly sendDtmf?: ((digits: string) => Effect.Effect<void, CallControlError>) | undefined
  /** Transfers the call (Twilio's REST API); absent: the service's transferer for the route (Transfers.ts). */
  readonly transfer?: ((request: Transfer.TransferRequest) => Effect.Effect<Transfer.TransferOutcome>) | undefined
}

export interface Call {
  readonly line: Line.Line
  readonly id: string
  readonly turns: TurnGate
  /**
   * Makes `client` the one the session talks to (the previous one, if any, is superseded).
   * `first` runs in the same step, before anything of the session reaches the client: what it
   * reads of the session (the history) and the events that follow leave nothing out between them.
   */
  readonly attach: (client: Client, first?: () => void) => Effect.Effect<void>
  /** `client` went without closing: the session waits `resumeSeconds` for another, then ends. */
  readonly detach: (client: Client) => Effect.Effect<void>
  /** Ends the call (its session closes when the Scope it was opened in does). */
  readonly end: (reason: string) => Effect.Effect<void>
  /** Completed with the reason once the call ended. */
  readonly ended: Deferred.Deferred<string>
  /** A resume token for this call, valid for twice `resumeSeconds`. */
  readonly mint: Effect.Effect<Token.ResumeToken>
  /** Whether `client` is the one attached now. */
  readonly holds: (client: Client) => boolean
  /** Cuts the attached client's connection (an operator's tool, and how tests drop a client):
   * the session waits for it to resume as after any cut. */
  readonly dropClient: Effect.Effect<void>
}

/** How long a drain's move waits for the reply it cut to end (a speech that cannot be interrupted plays on meanwhile). */
const CUT_BOUND_MS = 2000

/** Why a call ended here when the drain sent its client to another node. */
export const movedReason = "moved to another node"

/** Why a call ended when its session closed by itself (its client got the session's `close` event). */
export const sessionClosedReason = "the session closed"

/** Why a call ended when no client came back. */
export const graceReason = (seconds: number): string => `no client resumed the session within ${seconds} s`

/**
 * Starts a caller's session in the current Scope (it lives until the Scope closes; the caller
 * waits for `ended`). `withText`: the agents' words stream to the clients (/ws).
 */
export const open = (ctx: ConnectionContext, secret: Redacted.Redacted<string>, withText: boolean): Effect.Effect<Call, never, Scope.Scope> =>
  openWith(ctx, secret, withText, (audio, text, control) => Line.start(ctx, audio, text, control))

/**
 * Resumes session `id` from the durable store as a call in the current Scope (its process died,
 * drained, or is another node), waiting for a client as after any cut. Set up for the route its
 * client came back on, as a new call there is: a phone line (`twilio`) gets no text and is not
 * moved by a drain; its hang-up, keys and transfers go the phone's way.
 */
export const restore = (
  ctx: ConnectionContext,
  secret: Redacted.Redacted<string>,
  id: string,
  transport: "ws" | "twilio"
): Effect.Effect<Call, Line.ResumeFailure, Scope.Scope> =>
  openWith(ctx, secret, transport === "ws", (audio, text, control) => Line.resume(ctx, id, audio, text, control))

const openWith = <E>(
  ctx: ConnectionContext,
  secret: Redacted.Redacted<string>,
  withText: boolean,
  makeLine: (
    audio: AudioOutputService,
    text: TextOutputService | undefined,
    control: CallControlService
  ) => Effect.Effect<Line.Line, E, Scope.Scope | Transfer.Transferer>
): Effect.Effect<Call, E, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    let current: Client | undefined
    let grace: Fiber.Fiber<void> | undefined
    let refresh: Fiber.Fiber<void> | undefined
    const ended = yield* Deferred.make<string>()
    const toCurrent = <A>(f: (client: Client) => Effect.Effect<A>) => Effect.suspend(() => (current ? Effect.asVoid(f(current)) : Effect.void))

    const audio: AudioOutputService = {
      write: (pcm, rate, info) => toCurrent((c) => c.audio.write(pcm, rate, info)),
      clear: (info) => toCurrent((c) => c.audio.clear(info))
    }
    const text: TextOutputService = {
      start: (info) => toCurrent((c) => c.text?.start(info) ?? Effect.void),
      write: (delta, info) => toCurrent((c) => c.text?.write(delta, info) ?? Effect.void),
      end: (info, interrupted) => toCurrent((c) => c.text?.end(info, interrupted) ?? Effect.void)
    }
    // The agents' hang-up and keypad: through the client attached now (its transport's way).
    const transport = withText ? "/ws" : "twilio"
    const control: CallControlService = {
      transport,
      hangUp: (reason) =>
        Effect.suspend(() => current?.hangUp ? current.hangUp(reason) : Effect.void).pipe(
          Effect.ensuring(Effect.suspend(() => end(reason)))
        ),
      sendDtmf: (digits) =>
        Effect.suspend(() =>
          current === undefined
            ? Effect.fail(new CallControlError({ reason: "no_call", message: "no client is attached to the call (it may be reconnecting)" }))
            : current.sendDtmf
            ? current.sendDtmf(digits)
            : noDtmf(transport)(digits)
        )
    }
    // The agents' transfers (Transfer.cold/warm): the attached client's way, else the route's.
    const routeTransferer = Transfers.fallback(ctx.transfers, transport)
    const transferer: Transfer.TransfererService = {
      transport,
      transfer: (request) => Effect.suspend(() => current?.transfer ? current.transfer(request) : routeTransferer.transfer(request)),
      // A transfer in flight when the process died: its outcome is the route's to find (a
      // phone call's transfer record), whether or not a client is attached yet.
      restore: transport === "twilio" ? Transfers.twilioRestore(ctx.transfers) : undefined
    }
    const line = yield* makeLine(audio, withText ? text : undefined, control).pipe(Effect.provideService(Transfer.Transferer, transferer))
    const id = line.session.id
    // Until the entry agent holds the floor a caller's audio has no one to hear it, and a phone
    // stream's media follows its start at once: the session's first step is taken first (the
    // supervisor takes it without waiting on anything; no clock, so a test clock does not stall it).
    for (let turn = 0; turn < 10_000 && (yield* line.session.currentAgent) === undefined; turn++) yield* Effect.yieldNow
    const ttl = ctx.options.resumeSeconds * 2
    const mint = Effect.map(Clock.currentTimeMillis, (now) => Token.mintResume(secret, id, ttl, now))

    const turns = yield* turnGate(ctx.options)
    // The speeches begun and not ended, as the client was told: a drain cuts them before it moves the client.
    const playing = new Set<string>()
    let allEnded: Deferred.Deferred<void> | undefined
    const track = (event: SessionEvent) => {
      if (event.type === "speech_created") playing.add(event.speechId)
      else if (event.type === "speech_finished") playing.delete(event.speechId)
      if (playing.size === 0 && allEnded !== undefined) Deferred.doneUnsafe(allEnded, Effect.void)
    }
    yield* line.session.events.pipe(
      // A whisper is for the agent only: the caller is not sent it.
      Stream.runForEach((event) =>
        Effect.andThen(
          Effect.sync(() => turns.observe(event)),
          Effect.andThen(event.type === "whisper" ? Effect.void : toCurrent((c) => c.event(event)), Effect.sync(() => track(event)))
        )
      ),
      Effect.forkScoped
    )

    // Not awaited: the timers only sleep and send, and the grace timer ends the call itself.
    const stopTimers = Effect.sync(() => {
      grace?.interruptUnsafe()
      refresh?.interruptUnsafe()
      grace = refresh = undefined
    })
    const end = (reason: string) =>
      Effect.andThen(stopTimers, Effect.suspend(() => {
        // ended for good unless it moved: a durable session is then marked ended in the store
        if (reason !== movedReason && !Deferred.isDoneUnsafe(ended)) line.markEnded()
        return Deferred.succeed(ended, reason)
      })).pipe(Effect.asVoid)

    const refreshEvery = ctx.options.resumeSeconds * 500
    const call: Call = {
      line,
      id,
      turns,
      attach: (client, first) =>
        Effect.gen(function*() {
          const previous = current
          yield* Effect.sync(() => {
            first?.()
            current = client
            grace?.interruptUnsafe()
            refresh?.interruptUnsafe()
            grace = refresh = undefined
          })
          if (previous && previous !== client) yield* Deferred.succeed(previous.superseded, undefined)
          if (refreshEvery > 0) {
            refresh = yield* Effect.forever(Effect.andThen(Effect.sleep(refreshEvery), Effect.flatMap(mint, (t) => toCurrent((c) => c.token(t))))).pipe(
              Effect.forkIn(scope)
            )
          }
        }),
      detach: (client) =>
        Effect.gen(function*() {
          if (current !== client) return
          current = undefined
          yield* stopTimers
          if (ctx.options.resumeSeconds <= 0) return yield* end("client left")
          grace = yield* Effect.sleep(ctx.options.resumeSeconds * 1000).pipe(
            Effect.andThen(Effect.suspend(() => {
              if (current !== undefined) return Effect.void
              grace = undefined // this fiber: `end` must not interrupt it
              return end(graceReason(ctx.options.resumeSeconds))
            })),
            Effect.forkIn(scope)
          )
        }),
      end,
      ended,
      mint,
      holds: (client) => current === client,
      dropClient: toCurrent((c) => c.drop ?? Effect.void)
    }

    // The drain: closes the call at its deadline, or moves its client to another node at once.
    const closer = yield* Deferred.make<string>()
    // A /ws call away from its client moves too: the client resumes wherever it reconnects.
    // Nothing more reaches the client from here on, and what it was told (each event after its
    // item was committed) is in the store before it is told to go: the node it goes to claims the
    // session, which fences any later append from this one.
    // A reply still playing is cut first, as a barge-in cuts it, while the client still gets it:
    // the words it was sent are committed (marked interrupted) before it is told to go, instead
    // of when the session closes here, after the other node's claim has fenced that write.
    const move = Effect.gen(function*() {
      if (current === undefined ? !withText : current.move === undefined) return false
      if (playing.size > 0) {
        const ended = yield* Deferred.make<void>()
        allEnded = ended
        yield* line.session.interrupt
        yield* Deferred.await(ended).pipe(Effect.timeoutOption(CUT_BOUND_MS), Effect.ensuring(Effect.sync(() => void (allEnded = undefined))))
      }
      const client = current
      current = undefined
      yield* stopTimers
      yield* line.session.persist
      if (client?.move) yield* client.move(yield* mint)
      yield* end(movedReason)
      return true
    })
    yield* Effect.acquireRelease(ctx.registry.register(closer, move), () => ctx.registry.unregister(closer))
    yield* Deferred.await(closer).pipe(Effect.flatMap(end), Effect.forkIn(scope))
    // A session that closes by itself ends its call: no client waits on a closed session.
    yield* line.session.awaitClosed.pipe(Effect.andThen(end(sessionClosedReason)), Effect.forkIn(scope))
    return call
  })
