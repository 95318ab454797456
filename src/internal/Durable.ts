/**
 * What `AgentSession.start` adds for a durable session: the store's claim (a new session's, or a
 * resumed one's with its folded journal), the userdata's Schema checked before anything runs,
 * the journal hooked to the session's events and steps, and its end. A session without a store
 * has none of it (no journal, no flush, no wrapper on its events).
 */
import { Deferred, Effect, Scope } from "effect"
import type { Claim, SessionNotFound, SessionStoreService, StoreError, StoreFenced } from "../../services/SessionStore.ts"
import type { Agent } from "../Agent.ts"
import { ChatContext, nextId } from "../ChatContext.ts"
import { AgentNotFound, decodeUserdata, type DurableOptions, encodeUserdata, SessionNotResumable, UserdataRefused } from "../Durability.ts"
import * as Lifecycle from "./actor/Lifecycle.ts"
import * as EventLog from "./EventLog.ts"
import * as Journal from "./Journal.ts"
import * as Resume from "./Resume.ts"
import * as Speeches from "./Speeches.ts"
import type { Supervisor } from "./Supervisor.ts"

/** A durable session about to start: its claim and, when resumed, what its journal holds. */
export interface Prepared {
  readonly id: string
  readonly store: SessionStoreService
  readonly claim: Claim
  readonly options: DurableOptions<any>
  /** Present when resuming: the journal folded, and the agents by name. */
  readonly restore?: { readonly folded: Journal.Folded; readonly agents: ReadonlyMap<string, Agent> } | undefined
  /** Set once the journal exists (the supervisor's step hook reads it). */
  journal: Journal.Journal | undefined
}

export const defaultOwner = (): string => `pid-${typeof process === "undefined" ? "?" : process.pid}`

/** The userdata's JSON text by the Schema, or why it is refused. */
export const userdataText = (options: DurableOptions<any>, userdata: unknown): string | undefined | UserdataRefused => {
  if (userdata === undefined) return undefined
  if (!options.userdataSchema) {
    return new UserdataRefused({ reason: "no_schema", message: "a durable session's userdata needs a Schema (userdataSchema): it is journaled and restored on resume" })
  }
  const encoded = encodeUserdata(options.userdataSchema, userdata)
  return encoded instanceof UserdataRefused ? encoded : JSON.stringify(encoded.json)
}

/** A new durable session: the userdata checked, then the session created in the store. */
export const create = (options: DurableOptions<any>, userdata: unknown): Effect.Effect<Prepared, UserdataRefused | StoreError> =>
  Effect.gen(function*() {
    const checked = userdataText(options, userdata)
    if (checked instanceof UserdataRefused) return yield* checked
    const id = options.id ?? nextId("session")
    const claim = yield* options.store.create({ id, owner: options.owner ?? defaultOwner(), key: options.key })
    return { id, store: options.store, claim, options, journal: undefined }
  })

/**
 * Tests and the simulation: the process of session `id` "dies" here. Its journal writes nothing
 * more (no flush, no end), whatever the session's fibers still do.
 */
export const crash = (id: string): void => {
  const journal = Journal.sessions.get(id)
  if (journal) Journal.halt(journal)
  Journal.sessions.delete(id)
}

/** Whether session `id` of this process keeps a journal (a session without a store has none). */
export const journaled = (id: string): boolean => Journal.journaled(id)

/** The session's events, each telling the journal something may have changed. */
export const watch = (events: EventLog.EventLog, prepared: Prepared): EventLog.EventLog => {
  EventLog.watch(events, () => {
    if (prepared.journal) Journal.changed(prepared.journal)
  })
  return events
}

/** Everything committed so far into the store; returns once the store has it (after an append
 * in flight, which holds the journal's lock). */
export const persist = (prepared: Prepared): Effect.Effect<void> => Effect.suspend(() => prepared.journal ? Journal.flush(prepared.journal) : Effect.void)

/** What the supervisor runs before each message: the last step's changes into the store. */
export const beforeStep = persist

/** The history a resumed session starts with. */
export const history = (prepared: Prepared): ChatContext | undefined =>
  prepared.restore ? ChatContext.make(prepared.restore.folded.history) : undefined

/**
 * The journal of `supervisor`: its flusher in the session's Scope, a fenced writer's session
 * closed, the last changes written and the session ended in the store once it closes; then the
 * actors restored (resume) or the entry agent started.
 */
export const attach = (prepared: Prepared, supervisor: Supervisor, parent: Scope.Scope, entry: Agent | undefined): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { core, state } = supervisor
    const options = prepared.options
    const journal = yield* Journal.make({
      store: prepared.store,
      claim: prepared.claim,
      state,
      history: core.history,
      userdata: () => {
        const text = userdataText(options, core.userdata)
        return text instanceof UserdataRefused ? new Error(text.message) : text
      },
      now: core.now,
      work: core.work,
      floorFrozen: () => options.endOnClose === false && core.closed(),
      held: () => {
        const holder = state.holder
        if (holder === undefined || core.closed()) return false
        return Lifecycle.isPassing(holder) || Speeches.current(holder.speeches)?.state._tag === "Passing"
      },
      onFenced: (error: StoreFenced) => {
        core.emit({ type: "error", agent: undefined, source: "transport", message: `${error.message}: this process stops the session`, recoverable: false })
        Effect.runFork(supervisor.close)
      },
      onError: (message) => void core.emit({ type: "error", agent: undefined, source: "transport", message, recoverable: true })
    })
    prepared.journal = journal
    Journal.sessions.set(core.id, journal)
    // Not counted among the session's fibers (Diagnostics): it is the store's, not the floor's.
    yield* Effect.forkIn(Journal.flusher(journal), core.scope)
    let finished = false
    const finish = Effect.suspend(() => {
      if (finished) return Effect.void
      finished = true
      if (Journal.sessions.get(core.id) === journal) Journal.sessions.delete(core.id)
      return Effect.andThen(
        Journal.flush(journal),
        Effect.suspend(() =>
          options.endOnClose === false || !Journal.writing(journal) ? Effect.void : Effect.ignore(prepared.store.end(prepared.claim))
        )
      )
    })
    // After the shutdown (registered before it, so it runs after it), or as soon as `close` ends.
    yield* Scope.addFinalizer(parent, finish)
    yield* Deferred.await(supervisor.closedSignal).pipe(Effect.andThen(finish), Effect.forkIn(parent))
    if (prepared.restore) {
      const { folded, agents } = prepared.restore
      const encoded = folded.userdata === undefined ? undefined : JSON.stringify(folded.userdata.value)
      Journal.adoptSession(journal, core.history(), encoded, undefined)
      yield* Resume.restore(core, state, folded, agents, journal)
    } else if (entry) {
      core.send({ _tag: "Start", agent: entry })
    }
  })

/**
 * A session to resume: claimed (the old writer is fenced from here on), its journal folded, every
 * agent it names found among `agents`, its userdata decoded by the Schema.
 */
export const claim = (
  options: DurableOptions<any> & { readonly id: string },
  agents: ReadonlyArray<Agent>
): Effect.Effect<
  { readonly prepared: Prepared; readonly userdata: unknown },
  StoreError | SessionNotFound | SessionNotResumable | AgentNotFound | UserdataRefused
> =>
  Effect.gen(function*() {
    const { id, store } = options
    const taken = yield* store.claim(id, options.owner ?? defaultOwner())
    if (taken.session.meta.status === "ended") {
      return yield* new SessionNotResumable({ id, reason: "ended", message: `session ${id} was ended by its program; it cannot be resumed` })
    }
    const folded = Journal.fold(taken.session.entries)
    if (folded.floor === undefined || folded.actors.size === 0) {
      return yield* new SessionNotResumable({ id, reason: "not_started", message: `session ${id} has no journaled floor yet: start it anew` })
    }
    if (!folded.floor.actors.some(([, tag]) => tag !== "Closing" && tag !== "Terminated")) {
      return yield* new SessionNotResumable({ id, reason: "ended", message: `session ${id} was closing when its last writer stopped; it cannot be resumed` })
    }
    const byName = new Map(agents.map((agent) => [agent.name, agent]))
    for (const name of Resume.agentNames(folded)) {
      if (!byName.has(name)) {
        return yield* new AgentNotFound({ id, agent: name, message: `session ${id} names agent "${name}", which is not among the agents given to resume` })
      }
    }
    let userdata: unknown = undefined
    if (folded.userdata !== undefined && folded.userdata.value !== null) {
      if (!options.userdataSchema) {
        return yield* new UserdataRefused({ reason: "no_schema", message: `session ${id} has userdata: give resume its Schema (userdataSchema)` })
      }
      const decoded = decodeUserdata(options.userdataSchema, folded.userdata.value)
      if (decoded instanceof UserdataRefused) return yield* decoded
      userdata = decoded.value
    }
    return { prepared: { id, store, claim: taken.claim, options, restore: { folded, agents: byName }, journal: undefined }, userdata }
  })
