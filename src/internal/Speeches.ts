/**
 * An actor's speeches: a queue and at most one playing. Only the actor's loop starts or stops
 * them; a speech's work token is held from the moment it is queued until it ends.
 *
 * One exception, the interjection: a `say` or a reply queued while the playing speech waits for
 * its tools ("One moment, connecting you to verification.", a goodbye the tool awaits before it
 * hangs up) is spoken right away, while the tools run, so that it is heard before what they lead
 * to (an `AgentTask`'s first words, a handoff, the tool's own output) rather than after (rules 2,
 * 6 and 10). An interjected reply may call tools in turn, whose words interject over it: the
 * playing speeches form a stack, and only its top may be generating. A speech generates again
 * only once every interjection above it ended, and a batch that passes the floor passes it only
 * then: one voice at a time, nothing lost.
 *
 * A flow that waits for a speech (`handle.wait` in a tool or hook) gives its work token back
 * while it waits, and the speech returns it before waking the flow: the speech's own token keeps
 * the session busy meanwhile, and a task its tools run lets the session go quiet (rule 10). A
 * hook waiting so lets the actor's next hook go, as one waiting for a task does.
 */
import { Cause, Deferred, Effect, Exit, Fiber, type Scope } from "effect"
import * as Diagnostics from "../Diagnostics.ts"
import * as ErrorInfo from "../ErrorInfo.ts"
import { CurrentCall, HookLane, WorkToken, type WorkTokenCell } from "./FlowContext.ts"
import type { SessionCore } from "./SessionCore.ts"
import * as Speech from "../Speech.ts"


/** A failed speech: one line and a reason for the event; the whole cause goes to the debug log. */
const failed = (cause: Cause.Cause<unknown>): Speech.SpeechOutcome => {
  const info = ErrorInfo.fromCause(cause)
  return { _tag: "Failed", message: info.message, info, cause: Cause.pretty(cause) }
}

export interface SpeechHost {
  readonly name: string
  readonly core: SessionCore
  readonly scope: Scope.Scope
  /** Whether a queued speech may start now (the actor holds the floor, is active, ...). */
  readonly mayStart: () => boolean
  /** Whether the actor is closed (new speeches are dropped at once). */
  readonly closed: () => boolean
  /** Asks the actor's loop to interrupt `speech`. */
  readonly interrupt: (speech: Speech.Speech) => void
  /** Tells the actor's loop that the speech ended (so it can start the next one). */
  readonly ended: (speech: Speech.Speech) => void
  /** Wakes the actor's loop. */
  readonly kick: () => void
}

export interface Queued {
  readonly speech: Speech.Speech
  readonly body: (speech: Speech.Speech) => Effect.Effect<void, unknown>
}

export interface Speeches {
  readonly enqueue: (
    source: Speech.SpeechSource,
    options: EnqueueOptions,
    body: Queued["body"]
  ) => Speech.SpeechHandle
  /** Ends a speech as seen from outside (outcome, event, token); idempotent. */
  readonly finish: (speech: Speech.Speech, outcome: Speech.SpeechOutcome) => void
  /** Drops queued speeches (only those created before user turn `beforeTurn` when given). */
  readonly dropQueued: (reason: string, onlyInterruptible: boolean, beforeTurn?: number) => void
  /** Drops `speech` if queued, interrupts it if playing. */
  readonly interruptOne: (speech: Speech.Speech) => Effect.Effect<void>
  /** Stops the playing speech (see `interruptCurrent` in the actor). */
  readonly interruptCurrent: (force: boolean, beforeTurn?: number) => Effect.Effect<void>
  /** Starts the next queued speech if it may start; called on the step that runs it. */
  readonly startNext: () => Effect.Effect<void>
  readonly ended: (speech: Speech.Speech) => void
  /** The playing speech (the interjection, when the speech it interrupts has ended). */
  readonly current: () => Speech.Speech | undefined
  readonly queued: () => number
  /**
   * `speech`'s batch settled and passes the floor once what is said over it ended: no new reply
   * may start over it, and those playing over it make no further model call (their follow-ups
   * are cut, as a barge-in cuts them): the agent's model is done once the handoff is decided.
   */
  readonly startPassing: (speech: Speech.Speech) => void
  /** The playing speeches under `speech`, bottom first (those it interjects over). */
  readonly under: (speech: Speech.Speech) => ReadonlyArray<Speech.Speech>
  /** Ends a playing speech before its fiber does (it leaves the stack now; see ToolBatch's
   * `passAfter`). */
  readonly finishEarly: (speech: Speech.Speech, outcome: Speech.SpeechOutcome) => void
  /** Waits for `speech` to end, giving the token `cell` holds back meanwhile (see `waitFor`). */
  readonly awaitEnd: (speech: Speech.Speech, cell: WorkTokenCell) => Effect.Effect<void>
  /** Completes when no interjection over `speech` is being spoken or about to start. */
  readonly interjectedOver: (speech: Speech.Speech) => Effect.Effect<void>
  /** Whether an interjection over `speech` is being spoken or about to start (a cheap check
   * before waiting). */
  readonly interjectingOver: (speech: Speech.Speech) => boolean
  /** Completes when nothing is queued and nothing is being generated (see `Actor`). */
  readonly settled: Effect.Effect<void>
  readonly notifySettled: () => void
  /** Whether a flow waits for `settled`. */
  readonly waiting: () => boolean
  /**
   * Queued speeches hold work tokens only while their actor holds the floor: one waiting for
   * the floor to come back is not work the session can do now (rule 10).
   */
  readonly reconcile: (holdsFloor: boolean) => void
}

export interface EnqueueOptions {
  readonly allowInterruptions?: boolean | undefined
  /** A reply asked by a tool call while its batch runs: it may interject (a `say` always may). */
  readonly byTool?: boolean | undefined
}

const none: ReadonlyArray<Speech.Speech> = []

type Playing = { readonly queued: Queued; fiber: Fiber.Fiber<void, unknown> | undefined }

/** The speeches of one actor: the queue, the one playing, the interjections over it (a stack,
 * the last on top), the flows waiting for them to settle. */
interface State {
  readonly host: SpeechHost
  readonly work: SessionCore["work"]
  readonly queue: Array<Queued>
  current: Playing | undefined
  readonly interjections: Array<Playing>
  waiters: Array<Deferred.Deferred<void>>
}

export const make = (host: SpeechHost): Speeches => {
  const s: State = { host, work: host.core.work, queue: [], current: undefined, interjections: [], waiters: [] }
  return {
    enqueue: (source, options, body) => enqueue(s, source, options, body),
    finish: (speech, outcome) => finish(s, speech, outcome),
    dropQueued: (reason, onlyInterruptible, beforeTurn) => dropQueued(s, reason, onlyInterruptible, beforeTurn),
    interruptOne: (speech) => interruptOne(s, speech),
    interruptCurrent: (force, beforeTurn) => interruptCurrent(s, force, beforeTurn),
    startNext: () => startNext(s),
    ended: (speech) => {
      const entry = entryOf(s, speech)
      if (entry) removePlaying(s, entry)
    },
    current: () => s.current?.queued.speech ?? s.interjections[0]?.queued.speech,
    queued: () => s.queue.length,
    startPassing: (speech) => {
      speech.phase = "passing"
      const index = stackIndex(s, speech)
      if (index < 0) return
      // The interjections over it: from the one right above (stack index + 1) to the top.
      for (let i = s.current ? index : index + 1; i < s.interjections.length; i++) s.interjections[i]!.queued.speech.skipFollowUp = true
    },
    // Nothing is under a speech unless speeches play over one another (not on a handoff's path).
    under: (speech) =>
      s.interjections.length === 0 ? none : stack(s).slice(0, Math.max(0, stackIndex(s, speech))).map((entry) => entry.queued.speech),
    finishEarly: (speech, outcome) => {
      const entry = entryOf(s, speech)
      if (entry) removePlaying(s, entry)
      finish(s, speech, outcome)
    },
    awaitEnd: (speech, cell) => Effect.asVoid(awaitEnd(s, speech, cell)),
    interjectedOver: (speech) => interjectedOver(s, speech),
    interjectingOver: (speech) => interjectionOver(s, speech) !== undefined,
    settled: Effect.suspend(() => {
      if (isSettled(s)) return Effect.void
      const waiter = Deferred.makeUnsafe<void>()
      s.waiters.push(waiter)
      // What it waits for may be a speech about to interject: the loop starts it.
      host.kick()
      return Deferred.await(waiter)
    }),
    reconcile: (holdsFloor) => reconcile(s, holdsFloor),
    waiting: () => s.waiters.length > 0,
    notifySettled: () => {
      if (s.waiters.length === 0 || !isSettled(s)) return
      for (const waiter of s.waiters) Deferred.doneUnsafe(waiter, Effect.void)
      s.waiters = []
    }
  }
}

/**
 * Whether `queued` may interject over `under`: a `say` or a reply queued while a playing speech
 * waited for its tools, while `under` runs its tools; only a `say` once its batch settled and
 * passes the floor (a new reply then would be a model call after the handoff was decided).
 */
const interjectsOver = (under: Speech.Speech) => (queued: Queued): boolean => {
  const source = queued.speech.handle.source
  if (!queued.speech.duringTools) return false
  if (under.phase === "tools") return source === "say" || source === "generate_reply"
  return under.phase === "passing" && source === "say"
}

/** The playing speeches, bottom first: the current one, then the interjections over it (made
 * only where a speech plays over another; the common paths below read the fields). */
const stack = (s: State): ReadonlyArray<Playing> =>
  s.interjections.length === 0 ? (s.current ? [s.current] : []) : s.current ? [s.current, ...s.interjections] : s.interjections

/** The playing entry of `speech`, if it plays. */
const entryOf = (s: State, speech: Speech.Speech): Playing | undefined => {
  if (s.current?.queued.speech === speech) return s.current
  for (const entry of s.interjections) if (entry.queued.speech === speech) return entry
  return undefined
}

/** Where `speech` is in the stack of playing speeches (-1: not playing). */
const stackIndex = (s: State, speech: Speech.Speech): number => {
  if (s.current?.queued.speech === speech) return 0
  const offset = s.current ? 1 : 0
  for (let i = 0; i < s.interjections.length; i++) if (s.interjections[i]!.queued.speech === speech) return i + offset
  return -1
}

/** Whether a playing speech waits on its calls (another may be said over it). */
const anyInToolPhase = (s: State): boolean => {
  if (s.current && Speech.waitsOnCalls(s.current.queued.speech)) return true
  for (const entry of s.interjections) if (Speech.waitsOnCalls(entry.queued.speech)) return true
  return false
}

/** The speech on top of the stack: the only one that may be generating. */
const top = (s: State): Playing | undefined => s.interjections[s.interjections.length - 1] ?? s.current

const removePlaying = (s: State, entry: Playing) => {
  if (s.current === entry) s.current = undefined
  const index = s.interjections.indexOf(entry)
  if (index >= 0) s.interjections.splice(index, 1)
}

const finish = (s: State, speech: Speech.Speech, outcome: Speech.SpeechOutcome) => {
  if (speech.phase === "done") return
  speech.phase = "done"
  // Flows that gave their work token back to wait for this speech get it back first.
  for (const waiter of speech.parked.splice(0)) {
    s.work.acquire()
    waiter.returned = true
  }
  Deferred.doneUnsafe(speech.done, Exit.succeed(outcome))
  const holdsToken = speech.holdsToken
  speech.holdsToken = false
  if (outcome._tag !== "Dropped") {
    s.host.core.emit({
      type: "speech_finished",
      agent: s.host.name,
      speechId: speech.handle.id,
      interrupted: outcome._tag === "Interrupted"
    })
  }
  if (holdsToken) s.work.release()
}

const dropQueued = (s: State, reason: string, onlyInterruptible: boolean, beforeTurn?: number) => {
  for (let i = s.queue.length - 1; i >= 0; i--) {
    const queued = s.queue[i]!
    if (onlyInterruptible && !queued.speech.allowInterruptions) continue
    if (beforeTurn !== undefined && queued.speech.userTurn >= beforeTurn) continue
    s.queue.splice(i, 1)
    finish(s, queued.speech, { _tag: "Dropped", reason })
  }
}

const enqueue = (
  s: State,
  source: Speech.SpeechSource,
  options: EnqueueOptions,
  body: Queued["body"]
): Speech.SpeechHandle => {
  const host = s.host
  const speech = Speech.make({
    agent: host.name,
    source,
    allowInterruptions: options.allowInterruptions ?? true,
    userTurn: host.core.userTurns(),
    interrupt: (speech) => Effect.sync(() => host.interrupt(speech)),
    wait: (speech) => waitFor(s, speech)
  })
  speech.duringTools = (source === "say" || (source === "generate_reply" && options.byTool === true)) && anyInToolPhase(s)
  s.work.acquire()
  host.core.emit({ type: "speech_created", agent: host.name, speechId: speech.handle.id, source })
  if (host.closed()) {
    finish(s, speech, { _tag: "Dropped", reason: `${host.name} is closed` })
    return speech.handle
  }
  s.queue.push({ speech, body })
  host.kick()
  return speech.handle
}

/** Whether `speech` is cut by an interruption with these terms. */
const cuttable = (speech: Speech.Speech, force: boolean, beforeTurn: number | undefined) =>
  (force || speech.allowInterruptions) && (beforeTurn === undefined || speech.userTurn < beforeTurn)

/** Stops the playing speeches, top first (a barge-in, the floor passing). */
const interruptCurrent = (s: State, force: boolean, beforeTurn?: number): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (s.interjections.length === 0) return s.current ? interruptPlaying(s, s.current, force, beforeTurn) : Effect.void
    return Effect.forEach([...stack(s)].reverse(), (entry) => interruptPlaying(s, entry, force, beforeTurn), { discard: true })
  })

/** Stops one playing speech: cut while it generates; while its tools run, only its follow-up
 * (tool calls are never cut in half). */
const interruptPlaying = (s: State, entry: Playing, force: boolean, beforeTurn?: number): Effect.Effect<void> =>
  Effect.suspend(() => {
    const speech = entry.queued.speech
    if (speech.phase === "done" || !cuttable(speech, force, beforeTurn)) return Effect.void
    // The words before its calls end (what was heard is kept) and no follow-up comes, also when
    // the floor passes; the calls the model made run.
    if (speech.phase === "words") {
      speech.skipFollowUp = true
      speech.cut?.()
      return Effect.void
    }
    if (Speech.waitsOnCalls(speech)) {
      if (!force) speech.skipFollowUp = true
      return Effect.void
    }
    return (entry.fiber ? Fiber.interrupt(entry.fiber) : Effect.void).pipe(
      // A fiber interrupted before it ran never reaches its own handlers: settle it here.
      Effect.andThen(Effect.sync(() => {
        removePlaying(s, entry)
        finish(s, speech, { _tag: "Interrupted" })
      }))
    )
  })

const interruptOne = (s: State, speech: Speech.Speech): Effect.Effect<void> =>
  Effect.suspend(() => {
    const index = s.queue.findIndex((queued) => queued.speech === speech)
    if (index >= 0) {
      s.queue.splice(index, 1)
      finish(s, speech, { _tag: "Dropped", reason: "interrupted before it started" })
    }
    const entry = entryOf(s, speech)
    return entry ? interruptPlaying(s, entry, true) : Effect.void
  })

const outcomeOf = (exit: Exit.Exit<void, unknown>): Speech.SpeechOutcome =>
  Exit.isSuccess(exit)
    ? { _tag: "Finished" }
    : Cause.hasInterruptsOnly(exit.cause)
    ? { _tag: "Interrupted" }
    : failed(exit.cause)

const startNext = (s: State): Effect.Effect<void> => {
  if (!s.host.mayStart()) return Effect.void
  const playing = top(s)
  if (playing) {
    const index = s.queue.findIndex(interjectsOver(playing.queued.speech))
    if (index < 0) return Effect.void
    const [next] = s.queue.splice(index, 1)
    return play(s, next!, true)
  }
  const next = s.queue.shift()
  if (!next) return Effect.void
  return play(s, next, false)
}

/** Ends a speech that played: a failure said (one line; the cause to the debug log). */
/** Called on the speech's last step: ends it there, unless a failure's cause is logged first. */
const ended = (s: State, speech: Speech.Speech, outcome: Speech.SpeechOutcome): Effect.Effect<void> => {
  const end = () => {
    if (outcome._tag === "Failed") {
      const info = outcome.info
      s.host.core.emit({
        type: "error",
        agent: s.host.name,
        source: "model",
        message: info?.message ?? outcome.message,
        reason: info?.reason,
        status: info?.status,
        retryable: info?.retryable,
        recoverable: true
      })
    }
    s.host.ended(speech)
    finish(s, speech, outcome)
  }
  if (outcome._tag === "Failed" && outcome.cause !== undefined) {
    return Effect.andThen(Effect.logDebug(`reply of ${s.host.name} failed: ${outcome.cause}`), Effect.sync(end))
  }
  end()
  return Effect.void
}

/** Starts `next` (called from `startNext`, inside its suspend). */
const play = (s: State, next: Queued, asInterjection: boolean): Effect.Effect<void> => {
  // A playing speech always holds its token (a parked one gets it back here).
  if (!next.speech.holdsToken) {
    s.work.acquire()
    next.speech.holdsToken = true
  }
  const entry: Playing = { queued: next, fiber: undefined }
  if (asInterjection) s.interjections.push(entry)
  else s.current = entry
  next.speech.phase = "generating"
  return next.body(next.speech).pipe(
    // However it ends (uninterruptibly): a reply that fails because the session is closing
    // under it was cut, not broken.
    Effect.onExit((exit) =>
      ended(s, next.speech, s.host.core.closed() && Exit.isFailure(exit) ? { _tag: "Interrupted" } : outcomeOf(exit))
    ),
    Effect.forkIn(s.host.scope, { startImmediately: true }),
    Effect.map((fiber) => {
      entry.fiber = Diagnostics.counted(fiber)
    })
  )
}

/** The interjection directly over `speech`, or one queued to start over it. */
const interjectionOver = (s: State, speech: Speech.Speech): Speech.Speech | undefined => {
  const index = stackIndex(s, speech)
  if (index < 0) return undefined
  const above = s.interjections[s.current ? index : index + 1]
  if (above) return above.queued.speech
  return s.host.mayStart() ? s.queue.find(interjectsOver(speech))?.speech : undefined
}

/** Waits out the interjections over `speech`, and one queued to start (the actor's loop starts
 * it next). Its work token is parked on the interjection meanwhile: what is said over it may
 * run a task that waits for the user, and the session is quiet then. */
const interjectedOver = (s: State, speech: Speech.Speech): Effect.Effect<void> =>
  Effect.suspend(() => {
    const speaking = interjectionOver(s, speech)
    if (!speaking) return Effect.void
    s.host.kick()
    return awaitEnd(s, speaking, tokenOf(speech)).pipe(Effect.andThen(interjectedOver(s, speech)))
  })

/** A speech's own work token as a cell `awaitEnd` can park. */
const tokenOf = (speech: Speech.Speech): WorkTokenCell => ({
  get held() {
    return speech.holdsToken
  },
  set held(held: boolean) {
    speech.holdsToken = held
  }
})

/** Nothing generating: every playing speech waits for its tools and none may interject, or
 * nothing plays and nothing queued may start. */
const isSettled = (s: State) =>
  s.current || s.interjections.length > 0
    ? (!s.current || Speech.waitsOnCalls(s.current.queued.speech)) &&
      s.interjections.every((entry) => Speech.waitsOnCalls(entry.queued.speech)) &&
      !(s.host.mayStart() && s.queue.some(interjectsOver(top(s)!.queued.speech)))
    : s.queue.length === 0 || !s.host.mayStart()

/**
 * `handle.wait`: a flow holding a work token (a hook, a tool call) gives it back while it waits,
 * and `finish` returns it before waking the flow, so the speech's own work decides whether the
 * session is busy. A tool call that waits for the speech it runs in, or one under it, would wait
 * for ever (that speech waits for the call): a defect that says so, which answers the call.
 */
const waitFor = (s: State, speech: Speech.Speech): Effect.Effect<Speech.SpeechOutcome> =>
  Effect.withFiber((fiber) => {
    if (Deferred.isDoneUnsafe(speech.done)) return Deferred.await(speech.done)
    const call = fiber.getRef(CurrentCall)
    if (call && call.foreground()) {
      const own = stackIndex(s, call.speech)
      const target = stackIndex(s, speech)
      if (call.speech === speech || (own >= 0 && target >= 0 && target < own)) {
        return Effect.die(
          new Error(`a tool cannot wait for the speech it was called in (${speech.handle.id}), which waits for the tool: start a new reply or say and wait for that`)
        )
      }
    }
    // A hook waiting for a speech does not hold up the actor's next hook: the speech may wait
    // for the floor to come back (a task its tool runs), and an onExit must not wait for that.
    fiber.getRef(HookLane)?.()
    return awaitEnd(s, speech, fiber.getRef(WorkToken))
  })

/** Waits for `speech` to end; a token `cell` holds is given back meanwhile and returned (by
 * `finish`, before the speech's own is let go) as it ends. */
const awaitEnd = (s: State, speech: Speech.Speech, cell: WorkTokenCell): Effect.Effect<Speech.SpeechOutcome> => {
  if (!cell.held || Deferred.isDoneUnsafe(speech.done)) return Deferred.await(speech.done)
  const waiter: Speech.ParkedWaiter = { returned: false }
  cell.held = false
  speech.parked.push(waiter)
  s.work.release()
  return Deferred.await(speech.done).pipe(
    Effect.onExit(() =>
      Effect.sync(() => {
        // Woken otherwise (interrupted): the flow takes its token back itself.
        if (!waiter.returned) {
          const index = speech.parked.indexOf(waiter)
          if (index >= 0) speech.parked.splice(index, 1)
          waiter.returned = true
          s.work.acquire()
        }
        cell.held = true
      })
    )
  )
}

/**
 * Queued speeches hold work tokens only while their actor holds the floor: one waiting for the
 * floor to come back is not work the session can do now (rule 10).
 */
const reconcile = (s: State, holdsFloor: boolean) => {
  for (const { speech } of s.queue) {
    if (holdsFloor && !speech.holdsToken) {
      s.work.acquire()
      speech.holdsToken = true
    } else if (!holdsFloor && speech.holdsToken) {
      speech.holdsToken = false
      s.work.release()
    }
  }
}
