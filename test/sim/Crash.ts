/**
 * The simulation with crashes (issue 34). A seed's scenario runs as a durable session on an
 * in-memory store, checked by every rule as usual (life 1). Then its process "dies" at a point
 * the seed draws among the journal's appends: a fresh store holds the entries appended up to
 * there (what a store has after a crash), and a new session resumes from it (life 2), is given
 * one more user turn, goes quiescent and closes. Checked across both lives:
 *
 * - the journal is the session: at every append, the entries so far fold into exactly the
 *   shared history the session had (no committed item lost, none twice);
 * - the resumed session starts with that history;
 * - no item twice, and every call answered exactly once (rule 4) in its final history: calls that
 *   were running at the crash get their "interrupted by a restart" output;
 * - no agent entered in life 1 runs its onEnter again (rule 5 across the restart);
 * - life 2 goes quiescent, logs no defect, and leaves nothing running after its close (rule 11);
 * - the event-log rules over both lives joined (`joined`): life 1's log up to the crash, then
 *   life 2's, read as one session's: one floor and silence after handoff (rules 1, 2), batches
 *   and every call answered (rules 3, 4), hooks exactly once (rule 5). What a resume adds is
 *   allowed (docs/durability.md): "interrupted by a restart" outputs by the agent that made the
 *   call, holder or not; an activation that had not run running in life 2; the hooks not run
 *   yet of an agent no longer holding the floor at the crash (the resume pauses it).
 *
 * Where the process dies (`Crash.kind`): after an append (`between`); or in the middle of one,
 * which the store never finished: `lost` (the step's events happened, its entries never landed:
 * the store holds the appends before it) and `torn` (a store that broke its contract of atomic
 * appends: a prefix of the batch landed). Either way the resume must see a consistent journal:
 * a prefix of whole appends (Journal.ts drops a batch that did not land whole).
 *
 * Cascaded voice scenarios run too: life 1 through `VoicePipeline.start` on the scripted engines
 * (Cascade.ts), life 2 through `VoicePipeline.resume` on new ones, its one more turn spoken into
 * the resumed pipeline. Checked besides: the words of the agents the journal kept were played
 * before the process died (`unheard`): nothing unheard is in the history after the resume.
 */
import { Cause, Effect, Fiber, Layer, Logger } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { type JournalEntry, makeMemory, type SessionStoreService } from "../../services/SessionStore.ts"
import type { ChatItem } from "../../src/ChatContext.ts"
import type { AgentHandoffEvent, SessionEvent } from "../../src/Events.ts"
import * as Diagnostics from "../../src/Diagnostics.ts"
import { AgentSession } from "../../src/index.ts"
import * as Durable from "../../src/internal/Durable.ts"
import * as Journal from "../../src/internal/Journal.ts"
import { checkBatches, checkCalls } from "./CheckBatches.ts"
import { contextOf } from "./Check.ts"
import type { Ctx, Violation } from "./CheckCore.ts"
import { checkFloor, checkSilence } from "./CheckFloor.ts"
import { checkHooks } from "./CheckLife.ts"
import { type HookCall, type HookName, interpret, makeWorld, type ModelRequest, type TaskOutcome, type TimedCall, type World } from "./Interpret.ts"
import { Prng } from "./Prng.ts"
import { realtimeLayer, type Recording } from "./Runner.ts"
import type { Scenario } from "./Scenario.ts"
import { DEFAULT_EXCLUDE, scenarioFor, simulateScenario } from "./Sim.ts"
import * as Cascade from "./Cascade.ts"
import type { CascadeWorld } from "./Cascade.ts"
import { inputText } from "./Timeline.ts"

export interface CrashViolation {
  readonly rule: string
  readonly message: string
}

export interface CrashResult {
  readonly seed: number
  /** Why the seed ran no crash (a cascade scenario), if it did not. */
  readonly skipped?: string | undefined
  readonly appends: number
  /** The number of entries the store kept (the crash point). */
  readonly crashAt: number
  /** Where in the writes the process died. */
  readonly kind?: CrashKind | undefined
  /** The entries the store kept (for a failure's report). */
  readonly kept?: ReadonlyArray<JournalEntry> | undefined
  readonly violations: ReadonlyArray<CrashViolation>
}

/**
 * Where the process dies: after an append returned (`between`); during one whose entries never
 * landed (`lost`); during one of which only a prefix landed (`torn`: a store breaking its
 * contract; the journal must still read as whole appends).
 */
export type CrashKind = "between" | "lost" | "torn"

/** The last joined recording (for debugging a seed). */
export const debug: {
  last?: {
    readonly rec: Recording
    readonly cut: { readonly seq: number; readonly order: number }
    /** Where the process may have died with this store: from the cut to life 1's next append
     * that landed (or its end). Its events are life 1's (`life1`), the joined log has them not. */
    readonly window: { readonly seq: number; readonly order: number }
    readonly life1: Recording
  }
} = {}

/** The rules checked over both lives joined (one session's event log). */
const JOINED_CHECKS: ReadonlyArray<(ctx: Ctx) => Array<Violation>> = [checkFloor, checkSilence, checkBatches, checkCalls, checkHooks]

const SESSION_ID = "sim-session"
const STEP = 1_000
/** Life 2's model and realtime server number their calls and items from here (a real one's ids are unique). */
const LIFE_2_IDS = 1_000_000
const LIMIT = 600_000

const ids = (items: ReadonlyArray<ChatItem>) => items.map((item) => item.id)

const duplicates = (items: ReadonlyArray<ChatItem>): ReadonlyArray<string> => {
  const seen = new Set<string>()
  const twice: Array<string> = []
  for (const item of items) {
    if (seen.has(item.id)) twice.push(item.id)
    seen.add(item.id)
  }
  return twice
}

/**
 * Rule 4 over a history: each call has one output, after it (a background call's progress and
 * result are pairs of their own, Background.ts). A model may use a call id again in a later turn: an output answers the oldest open call with its id.
 */
const unanswered = (items: ReadonlyArray<ChatItem>): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const open: Array<{ readonly callId: string; readonly name: string }> = []
  for (const item of items) {
    if (item._tag === "FunctionCall") open.push(item)
    else if (item._tag === "FunctionCallOutput") {
      const at = open.findIndex((call) => call.callId === item.callId)
      if (at < 0) problems.push(`output ${item.name} (${item.callId}) answers no open call`)
      else open.splice(at, 1)
    }
  }
  for (const call of open) problems.push(`call ${call.name} (${call.callId}) has no output`)
  return problems
}

const words = (text: string) => text.split(/\s+/).filter((word) => word !== "")

/**
 * Cascaded voice: every agent's words the journal kept were heard before the process died (audio
 * of a reply step of that agent, with those words, was played by then): a reply made ahead
 * (preemptive generation, a first sentence spoken ahead) and never played is not in the journal.
 * A reply heard whole is kept whole; one cut keeps a prefix of its words (what was heard). (A
 * sentence whose synthesis failed is skipped and the reply goes on, VoiceOutput: its words are
 * kept unheard, by design; such a reply is passed over.)
 */
export const unheard = (history: ReadonlyArray<ChatItem>, cascade: CascadeWorld, at: { readonly order: number }): ReadonlyArray<string> => {
  const played = new Set(cascade.writes.filter((w) => w.order <= at.order).map((w) => w.speechId))
  const problems: Array<string> = []
  for (const item of history) {
    if (item._tag !== "Message" || item.role !== "assistant" || item.agent === undefined) continue
    const kept = words(item.text)
    if (kept.length === 0) continue
    const heard = cascade.texts.some((step) => {
      if (step.agent !== item.agent || !played.has(step.speechId)) return false
      const said = words(step.text)
      return item.interrupted ? kept.every((word, i) => said[i] === word) : said.join(" ") === kept.join(" ")
    })
    const skipped = cascade.unsynthesized.some((text) => words(text).length > 0 && ` ${kept.join(" ")} `.includes(` ${words(text).join(" ")} `))
    if (!heard && !skipped) problems.push(`the journal keeps ${item.agent}'s "${item.text}" (${item.id}), which was not played before the process died`)
  }
  return problems
}

/** One append of life 1: the entries before and after it, the session then. */
interface Append {
  /** Entries the store held before it. */
  readonly from: number
  /** Entries the store held after it. */
  readonly count: number
  /** The session's history's ids then. */
  readonly history: ReadonlyArray<string>
  /** The seq of the next event, and the world's tick, at the append. */
  readonly seq: number
  readonly order: number
}

/** The agents the journal says hold the floor: the holder, and the callers its task was lent by. */
const holding = (folded: Journal.Folded): ReadonlySet<string> => {
  const names = new Set<string>()
  let key = folded.floor?.holder ?? null
  while (key !== null) {
    const actor = folded.actors.get(key)?.entry
    if (!actor) break
    names.add(actor.agent)
    key = actor.task?.caller ?? null
  }
  return names
}

/** Two folds describe the same session: floor, userdata and every actor's context. */
const sameSession = (a: Journal.Folded, b: Journal.Folded): boolean => {
  const text = (f: Journal.Folded) =>
    JSON.stringify([f.floor, f.userdata, [...f.actors].map(([key, { entry, items }]) => [key, entry, ids(items)])])
  return text(a) === text(b)
}

/** A store that records, at each append, how many entries it holds and the session's history. */
const recording = (world: () => World | undefined) => {
  const inner = makeMemory(() => 0)
  const appends: Array<Append> = []
  const store: SessionStoreService = {
    ...inner,
    append: (claim, entries) => {
      const from = claim.nextSeq
      return inner.append(claim, entries).pipe(Effect.tap(() =>
        Effect.sync(() => {
          const w = world()
          const session = w?.session
          const history = session ? Effect.runSync(session.history).items : []
          appends.push({ from, count: claim.nextSeq, history: ids(history), seq: w?.seq() ?? 0, order: w?.tick() ?? 0 })
        })
      ))
    }
  }
  return { store, appends }
}

/**
 * A fresh store holding `entries`: what a durable store has after the process died. `renewed`:
 * the dying write had renewed the claim (the session's row touched) before its entries.
 */
const storeWith = (entries: ReadonlyArray<JournalEntry>, renewed = false): Effect.Effect<SessionStoreService> =>
  Effect.gen(function*() {
    let now = 0
    const store = makeMemory(() => now)
    const claim = yield* Effect.orDie(store.create({ id: SESSION_ID, owner: "life-1" }))
    if (entries.length > 0) yield* Effect.orDie(store.append(claim, entries.map(({ at, kind, data }) => ({ at, kind, data }))))
    if (renewed) {
      now = 1
      yield* Effect.orDie(store.append(claim, []))
    }
    return store
  })

/** What life 2 recorded, for the joined log. */
interface SecondLife {
  readonly events: ReadonlyArray<SessionEvent>
  readonly hooks: ReadonlyArray<HookCall>
  readonly requests: ReadonlyArray<ModelRequest>
  readonly taskOutcomes: ReadonlyArray<TaskOutcome>
  readonly timed: ReadonlyArray<TimedCall>
  readonly history: ReadonlyArray<ChatItem>
  /** The seq and tick of the last quiescent point before the close, and of the close. */
  readonly settledSeq: number | undefined
  readonly settledOrder: number | undefined
  readonly closeSeq: number
  readonly closeOrder: number
}

/** Life 2: resumes from `store`, waits for quiescence, takes one more turn, closes. */
const secondLife = (
  scenario: Scenario,
  store: SessionStoreService,
  expected: ReadonlyArray<string>,
  entered: ReadonlySet<string>,
  violations: Array<CrashViolation>
): Effect.Effect<SecondLife> =>
  Effect.gen(function*() {
    const world = makeWorld()
    let events: ReadonlyArray<SessionEvent> = []
    let history: ReadonlyArray<ChatItem> = []
    let settled: { seq: number; order: number } | undefined
    let closed = { seq: 0, order: 0 }
    const built = interpret(scenario, world)
    const logs: Array<string> = []
    const before = Diagnostics.snapshot()
    const body = Effect.gen(function*() {
      yield* TestClock.setTime(0)
      const durable = { id: SESSION_ID, store }
      const session = scenario.cascade
        ? yield* Cascade.resume(scenario.cascade, world.cascade, world.seq, world.tick, { ...built.options, agents: built.all }, durable)
        : yield* AgentSession.resume({ ...built.options, ...durable, agents: built.all })
      world.session = session
      const start = ids((yield* session.history).items).slice(0, expected.length)
      if (start.join() !== expected.join()) {
        violations.push({ rule: "resume", message: `the resumed history does not start with the journal's: ${start.length} of ${expected.length} items match` })
      }
      // Quiescent as the plain simulation's close waits for it: background calls included (a
      // late result may pass the floor, whose hooks then run before the close).
      const quiet = Effect.gen(function*() {
        const fiber = yield* Effect.forkChild(session.idleWithBackground, { startImmediately: true })
        let elapsed = 0
        while (!fiber.pollUnsafe()) {
          if (elapsed > LIMIT) {
            violations.push({ rule: "rule 10", message: `the resumed session did not go quiescent within ${LIMIT} ms` })
            yield* Fiber.interrupt(fiber)
            return false
          }
          yield* TestClock.adjust(STEP)
          elapsed += STEP
        }
        return true
      })
      // (A tool may have hung up as life 2 began: then there is no one to say more.)
      // The next turn: typed, or (cascaded voice) spoken into the resumed pipeline and heard by it.
      const spec = scenario.cascade
      const turn = spec
        ? Effect.gen(function*() {
          const speaking = yield* Effect.forkChild(Cascade.utter(world.cascade, spec, 900, 600), { startImmediately: true })
          while (!speaking.pollUnsafe()) yield* TestClock.adjust(Cascade.FRAME_MS)
        })
        : session.send(inputText(900))
      if ((yield* quiet) && world.hungUp === undefined) {
        yield* turn
        if ((yield* quiet) && world.hungUp === undefined) settled = { seq: world.seq(), order: world.tick() }
      }
      // Closed by a tool that hung up, or now.
      closed = world.hungUp ?? { seq: world.seq(), order: world.tick() }
      yield* session.close
      history = (yield* session.history).items
      events = yield* session.eventLog
      // (An id life 1 itself recorded twice is life 1's: seed 935, a spoken turn passed on to the
      // next holder under its transcript's id, is in the history for both agents.)
      const before = new Set(expected.filter((id, i) => expected.indexOf(id) !== i))
      for (const id of duplicates(history)) {
        if (before.has(id)) continue
        const twice = history.filter((item) => item.id === id).map((item) => JSON.stringify(item).slice(0, 160))
        violations.push({ rule: "no item twice", message: `item ${id} is in the history twice: ${twice.join(" / ")}` })
      }
      for (const problem of unanswered(history)) violations.push({ rule: "rule 4", message: problem })
      // Rule 5 across the restart: an agent entered in life 1 never enters again.
      for (const call of world.hooks) {
        if (call.hook === "onEnter" && entered.has(call.agent)) {
          violations.push({ rule: "rule 5", message: `${call.agent} entered in life 1 and its onEnter ran again after the resume` })
        }
      }
      for (const event of events) {
        if (event.type === "error" && (event.source === "input" || event.source === "transport")) {
          violations.push({ rule: "no unhandled error", message: `life 2: ${event.message}` })
        }
      }
    })
    yield* body.pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(ScriptedModel.layer(built.rules, { firstCall: LIFE_2_IDS }), realtimeLayer(scenario, built, LIFE_2_IDS), TestClock.layer(), Logger.layer([
        Logger.make((options) => {
          if (options.logLevel === "Warn" || options.logLevel === "Error" || options.logLevel === "Fatal") {
            const message = Array.isArray(options.message) ? options.message.map(String).join(" ") : String(options.message)
            // Rejected realtime updates are scripted: the fallback is logged, as it should be.
            const fallback = /^realtime update failed \(update \d+ rejected\): falling back to a new connection$/.test(message)
            if (!message.includes("test clock") && !(fallback && scenario.realtime?.rejectEvery)) logs.push(`${options.logLevel}: ${message}`)
          }
        })
      ]))),
      Effect.catchCause((cause) => Effect.sync(() => void violations.push({ rule: "no unhandled error", message: `life 2 failed: ${Cause.pretty(cause)}` })))
    )
    for (let i = 0; i < 3; i++) yield* Effect.yieldNow
    for (const log of logs) violations.push({ rule: "no unhandled error", message: `life 2 log: ${log}` })
    const after = Diagnostics.snapshot()
    const leaked = Object.entries(after).filter(([key, value]) => typeof value === "number" && value !== (before as unknown as Record<string, number>)[key])
    if (leaked.length > 0) violations.push({ rule: "rule 11", message: `life 2 left running: ${leaked.map(([k, v]) => `${k}=${v}`).join(", ")}` })
    return {
      events,
      hooks: world.hooks,
      requests: world.requests,
      taskOutcomes: world.taskOutcomes,
      timed: world.timed,
      history,
      settledSeq: settled?.seq,
      settledOrder: settled?.order,
      closeSeq: closed.seq,
      closeOrder: closed.order
    }
  })

/**
 * Both lives as one session's recording: life 1's events and records up to the crash (`at`),
 * then life 2's, its seqs and ticks moved on past them. Its history is life 2's final one; its
 * quiescent point is life 2's last before its close (none: the hooks are checked as a prefix).
 */
export const joined = (
  life1: Recording,
  at: { readonly seq: number; readonly order: number },
  life2: SecondLife,
  holding: ReadonlySet<string>
): Recording => {
  const seq = (n: number) => n + at.seq
  const order = (n: number) => n + at.order + 1
  const events = [
    ...life1.events.filter((e) => e.seq < at.seq),
    ...life2.events.map((e) => ({ ...e, seq: seq(e.seq) }) as SessionEvent)
  ]
  // A hook recorded at the tick right after the append, with no event between, started there:
  // that append was its start made durable (Journal.activated), so it counts as run.
  const before = life1.hooks.filter((h) => h.order < at.order || (h.order === at.order + 1 && h.seq === at.seq))
  // An agent that no longer holds the floor when the process died (not the holder, nor a caller
  // waiting for it) is paused by the resume: the hooks its handoffs called for that had not run
  // (its onExit as it passed the floor on; its onEnter too, when it passed the floor before that
  // started) do not run (docs/durability.md). They count as run at the crash.
  const skipped: Array<HookCall> = []
  const handoffs = life1.events.filter((e): e is AgentHandoffEvent => e.seq < at.seq && e.type === "agent_handoff")
  for (const spec of [...life1.scenario.agents, ...life1.scenario.tasks]) {
    if (holding.has(spec.name)) continue
    const expected: Array<HookName> = []
    for (const e of handoffs) {
      if (e.from === spec.name && (e.kind === "handoff" || e.kind === "return" || e.kind === "take_over")) expected.push("onExit")
      if (e.to === spec.name && !e.resumed) expected.push("onEnter")
      if (e.to === spec.name && e.resumed && (e.kind === "handoff" || e.kind === "hand_back")) expected.push("onResume")
    }
    const due = expected.filter((hook) => spec[hook] !== undefined)
    const ran = before.filter((h) => h.agent === spec.name).map((h) => h.hook)
    if (ran.some((hook, i) => due[i] !== hook)) continue
    for (const hook of due.slice(ran.length)) skipped.push({ agent: spec.name, hook, seq: at.seq, order: at.order })
  }
  const moved = (h: HookCall) => ({ ...h, seq: seq(h.seq), order: order(h.order) })
  const hooks = [...before, ...skipped, ...life2.hooks.map(moved)]
  const taskOutcomes = [
    ...life1.taskOutcomes.filter((o) => o.seq < at.seq),
    ...life2.taskOutcomes.map((o) => ({ ...o, seq: seq(o.seq) }))
  ]
  const settled = life2.settledSeq === undefined ? undefined : {
    seq: seq(life2.settledSeq),
    // Life 1's (one started right after the cut has the order life 2's tick 0 gets: seed 6808).
    hooks: [...before, ...skipped, ...life2.hooks.filter((h) => h.order < life2.settledOrder!).map(moved)],
    taskOutcomes,
    holder: undefined,
    diagnostics: life1.after,
    awaiting: 0,
    openConnections: 0,
    lateEvents: 0,
    order: order(life2.settledOrder!)
  }
  return {
    ...life1,
    events,
    history: life2.history,
    hooks,
    requests: [
      ...life1.requests.filter((r) => r.order < at.order),
      ...life2.requests.map((r) => ({ ...r, seq: seq(r.seq), order: order(r.order) }))
    ],
    taskOutcomes,
    finishes: life1.finishes.filter((f) => f.seq < at.seq),
    timed: [...life1.timed, ...life2.timed],
    actions: [],
    runs: [],
    handoffs: life1.handoffs.filter((h) => h.answeredSeq !== undefined && h.answeredSeq < at.seq),
    settled,
    closeSeq: seq(life2.closeSeq),
    closeOrder: order(life2.closeOrder),
    closedEarly: false,
    failures: []
  }
}

/** The rules of one session's event log over the joined recording (life 2 from `resumedAt`). */
export const checkJoined = (rec: Recording, resumedAt: number): ReadonlyArray<Violation> => {
  const ctx = contextOf(rec, resumedAt)
  return JOINED_CHECKS.flatMap((rule) => rule(ctx))
}

export interface CrashOptions {
  /** Die after the first append whose journal so far passes this test (a regression's chosen
   * point), instead of at a point the seed draws. */
  readonly at?: ((folded: Journal.Folded) => boolean) | undefined
}

export const simulateCrash = (seed: number, options: CrashOptions = {}): Effect.Effect<CrashResult> =>
  Effect.gen(function*() {
    const scenario = scenarioFor(seed, { exclude: DEFAULT_EXCLUDE })
    let world: World | undefined
    const { store, appends } = recording(() => world)
    const violations: Array<CrashViolation> = []
    const life1 = yield* simulateScenario(scenario, {
      exclude: DEFAULT_EXCLUDE,
      store,
      storeId: SESSION_ID,
      watch: (w) => {
        world = w
      }
    })
    for (const v of life1.violations) violations.push({ rule: `life 1 ${v.rule}`, message: v.message })
    const stored = yield* Effect.orDie(store.load(SESSION_ID))
    const entries = stored._tag === "Some" ? stored.value.entries : []
    // The journal is the session: each append's entries fold into the history it had then.
    for (const append of appends) {
      const folded = Journal.fold(entries.slice(0, append.count))
      if (ids(folded.history).join() !== append.history.join()) {
        violations.push({ rule: "journal", message: `the ${append.count} entries fold into ${folded.history.length} history items, the session had ${append.history.length}` })
        break
      }
    }
    // Resumable: the entries kept record a holder (started, not closing: a session closing when
    // its process died is not resumable, SessionNotResumable).
    const resumable = (count: number) => {
      const floor = Journal.fold(entries.slice(0, count)).floor
      return floor?.actors.some(([key, tag]) => key === floor.holder && tag !== "Closing" && tag !== "Terminated") ?? false
    }
    const prng = new Prng(seed).fork("crash")
    const wanted: CrashKind = (["between", "lost", "torn"] as const)[prng.int(0, 2)]!
    // The crash points of each kind: the append it falls in (or after) and the entries kept.
    const candidates = (kind: CrashKind) =>
      appends.flatMap((append) => {
        if (kind === "between") return resumable(append.count) ? [{ append, kept: append.count }] : []
        if (kind === "lost") return resumable(append.from) ? [{ append, kept: append.from }] : []
        const cuts: Array<{ append: Append; kept: number }> = []
        for (let kept = append.from + 1; kept < append.count; kept++) if (resumable(kept)) cuts.push({ append, kept })
        return cuts
      })
    let kind = options.at ? "between" : wanted
    let points = candidates(kind)
    if (points.length === 0 && kind !== "between") points = candidates(kind = "between")
    if (options.at) points = points.filter(({ kept }) => options.at!(Journal.fold(entries.slice(0, kept)))).slice(0, 1)
    if (points.length === 0) return { seed, skipped: options.at ? "no such point" : "no floor journaled", appends: appends.length, crashAt: 0, violations }
    const { append: point, kept: crashAt } = points[prng.int(0, points.length - 1)]!
    // A lost write may have renewed the claim before its entries (SQLite touches the row first).
    const renewed = kind === "lost" && prng.int(0, 1) === 1
    Durable.crash(SESSION_ID)
    const kept = entries.slice(0, crashAt)
    const folded = Journal.fold(kept)
    // What was committed: the last append that returned, whole, before the crash.
    const committed = [...appends].reverse().find((a) => a.count <= crashAt)
    const journaled = ids(folded.history)
    // A consistent journal: what the resume reads is the session as of its last whole append.
    if (!committed) {
      violations.push({ rule: "journal", message: `a ${kind} crash at entry ${crashAt} left a floor but no whole append` })
    } else if (journaled.join() !== committed.history.join() || !sameSession(folded, Journal.fold(entries.slice(0, committed.count)))) {
      violations.push({ rule: "journal", message: `after a ${kind} crash at entry ${crashAt} the journal reads other than its last whole append (${committed.count} entries): ${journaled.length} history items, ${committed.history.length} committed` })
    }
    if (scenario.cascade) for (const problem of unheard(folded.history, life1.recording.cascade, committed ?? point)) violations.push({ rule: "heard", message: problem })
    const entered = new Set<string>()
    for (const [key, tag] of folded.floor?.actors ?? []) {
      const actor = folded.actors.get(key)?.entry
      if (actor && !actor.task && tag !== "Starting" && tag !== "Closing" && tag !== "Terminated") entered.add(actor.agent)
    }
    const life2 = yield* secondLife(scenario, yield* storeWith(kept, renewed), journaled, entered, violations)
    // The joined log: life 1's up to the crash (a write that never finished: its step's events
    // happened), then life 2's.
    // The joined log: life 1's up to its last whole append, then life 2's. What happened after
    // it (a write that never finished: its step's events) is lost with the process
    // (docs/durability.md).
    const cut = committed ?? point
    const rec = joined(life1.recording, cut, life2, holding(folded))
    const next = appends.find((a) => a.count > crashAt && a.seq > cut.seq)
    debug.last = { rec, cut, window: next ?? { seq: Infinity, order: Infinity }, life1: life1.recording }
    for (const v of checkJoined(rec, cut.seq)) {
      violations.push({ rule: `joined ${v.rule}`, message: `${kind} crash: ${v.message}${v.seq === undefined ? "" : ` (seq ${v.seq}; life 2 from ${cut.seq})`}` })
    }
    return { seed, kind, appends: appends.length, crashAt, kept, violations }
  })
