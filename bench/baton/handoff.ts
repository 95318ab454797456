/**
 * Handoff overhead, the same scenario as bench/agents-js/bench.mjs. Each run, on a fresh session
 * with a fresh scripted model and fresh agents:
 *   AgentA holds the floor and gets the user's "go"; its model answers with one tool call,
 *   `transfer`, whose handler returns `Handoff.to(agentB)`; AgentB's onEnter asks for a reply
 *   (`Agent.reply`) and waits for it (`handle.wait`); the model answers "Hello from AgentB".
 * Timestamps (performance.now()):
 *   runCall    just before `session.run("go")`
 *   toolStart  first statement of the `transfer` handler
 *   onEnter    first statement of AgentB's onEnter
 *   replyDone  right after `yield* handle.wait` of AgentB's reply
 *   runDone    right after `session.run` resolved (the session is quiescent)
 * With `BENCH_JOURNAL` (a `BATON_STORE` value, e.g. sqlite:/tmp/h.db) each session is durable:
 * journaled to that store (bench/resume.ts compares it with the journal off).
 */
import { Context, Effect, Layer, Scope } from "effect"
import { SessionStore, type SessionStoreService } from "../../services/SessionStore.ts"
import * as SessionStoreConfig from "../../services/SessionStoreConfig.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Handoff, type SpeechFinished, Tool } from "../../src/index.ts"
import type { SpeechOutcome } from "../../src/Speech.ts"
import { envInt, log, r3, type Summary, summarize } from "./stats.ts"

export interface HandoffTimes {
  readonly toolToReplyDone: Summary
  readonly runToResolved: Summary
  readonly toolToOnEnter: Summary
  readonly onEnterToReplyDone: Summary
}

export interface HandoffResult extends HandoffTimes {
  readonly n: number
  readonly warmup: number
  readonly replyDoneBeforeRunResolved: number
  /** The same N runs again once the process is warm: after `after` runs in all (WARM_AFTER). */
  readonly warm?: HandoffTimes & { readonly after: number } | undefined
  readonly wallMs: number
}

const REPLY_TEXT = "Hello from AgentB"

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "go", agent: "AgentA" }, reply: { toolCalls: [{ name: "transfer" }] } },
  { when: { instructions: "greet", agent: "AgentB" }, reply: { text: REPLY_TEXT } }
]

interface Times {
  runCall?: number
  toolStart?: number
  onEnter?: number
  replyDone?: number
  runDone?: number
}

interface Row {
  readonly toolToReplyDone: number
  readonly runToResolved: number
  readonly toolToOnEnter: number
  readonly onEnterToReplyDone: number
  readonly replyBeforeRunResolved: boolean
  /** The measured window, tool entered → B's reply finished, in performance.now() ms. */
  readonly window: readonly [number, number]
}

/** One run on a fresh session, checked; the session closes when the run's Scope does. */
export const handoffOnce = (iter: string | number, store?: SessionStoreService): Effect.Effect<Row, Error> =>
  Effect.scoped(Effect.gen(function*() {
    const t: Times = {}
    let outcome: SpeechOutcome | undefined
    const agentB = Agent.make({
      name: "AgentB",
      instructions: "You are AgentB",
      onEnter: Effect.gen(function*() {
        t.onEnter = performance.now()
        const handle = yield* Agent.reply({ instructions: "greet" })
        outcome = yield* handle.wait
        t.replyDone = performance.now()
      })
    })
    const agentA = Agent.make({
      name: "AgentA",
      instructions: "You are AgentA",
      tools: [
        Tool.make("transfer", {
          description: "Transfer the user to AgentB",
          handler: () => {
            t.toolStart = performance.now()
            return Effect.succeed(Handoff.to(agentB))
          }
        })
      ]
    })
    const models = yield* Layer.build(ScriptedModel.layer(rules))
    const session = yield* (store
      ? AgentSession.start({ agent: agentA, store }).pipe(Effect.mapError((e) => new Error(e.message)))
      : AgentSession.start({ agent: agentA })).pipe(Effect.provideContext(models))
    yield* session.idle // start-up is not timed (agents-js awaits session.start())

    t.runCall = performance.now()
    const result = yield* session.run("go")
    t.runDone = performance.now()

    // ---- correctness, every run (warm-up included) ----
    const fail = (message: string) => Effect.fail(new Error(`handoff run ${iter}: ${message}`))
    const { runCall, toolStart, onEnter, replyDone, runDone } = t
    if (runCall === undefined || toolStart === undefined || onEnter === undefined || replyDone === undefined || runDone === undefined) {
      return yield* fail(`timestamp missing ${JSON.stringify(t)}`)
    }
    if (!(runCall <= toolStart && toolStart <= onEnter && onEnter <= replyDone)) {
      return yield* fail(`timestamps out of order ${JSON.stringify(t)}`)
    }
    const holder = yield* session.currentAgent
    if (holder !== agentB) return yield* fail(`${holder?.name ?? "nobody"} holds the floor, expected AgentB`)
    if (outcome?._tag !== "Finished") return yield* fail(`AgentB's reply ended with ${JSON.stringify(outcome)}`)
    const spoken = (yield* session.history).items.flatMap((item) =>
      item._tag === "Message" && item.role === "assistant" ? [`${item.agent}: ${item.text}`] : []
    )
    if (spoken.length !== 1 || spoken[0] !== `AgentB: ${REPLY_TEXT}`) {
      return yield* fail(`assistant messages in history ${JSON.stringify(spoken)}`)
    }
    const model = Context.get(models, ScriptedModel.ScriptedModel)
    if (model.requestsFor("AgentA").length !== 1 || model.requestsFor("AgentB").length !== 1) {
      return yield* fail(
        `model calls: AgentA ${model.requestsFor("AgentA").length}, AgentB ${model.requestsFor("AgentB").length} (expected 1 and 1)`
      )
    }
    const events = result.events
    if (!events.some((e) => e.type === "function_call" && e.name === "transfer" && e.agent === "AgentA")) {
      return yield* fail("no function_call transfer by AgentA in the run")
    }
    if (!events.some((e) => e.type === "agent_handoff" && e.from === "AgentA" && e.to === "AgentB" && e.kind === "handoff")) {
      return yield* fail("no agent_handoff AgentA -> AgentB in the run")
    }
    const finished = (yield* session.eventLog).filter((e): e is SpeechFinished => e.type === "speech_finished" && e.agent === "AgentB")
    if (finished.length !== 1 || finished[0]!.interrupted) {
      return yield* fail(`speech_finished events ${JSON.stringify(finished)}`)
    }
    return {
      toolToReplyDone: replyDone - toolStart,
      runToResolved: runDone - runCall,
      toolToOnEnter: onEnter - toolStart,
      onEnterToReplyDone: replyDone - onEnter,
      replyBeforeRunResolved: replyDone <= runDone,
      window: [toolStart, replyDone]
    }
  }))

export const benchHandoff: Effect.Effect<HandoffResult, Error> = Effect.gen(function*() {
  const n = envInt("N", 200)
  const warmup = envInt("WARMUP", 20)
  // The same measurement once the JIT has optimized the path (0: not measured).
  const warmAfter = envInt("WARM_AFTER", 500)
  const timeoutMs = envInt("ITER_TIMEOUT_MS", 10_000)
  const journal = process.env.BENCH_JOURNAL
  const storeScope = yield* Scope.make()
  const store = journal
    ? Context.get(yield* Layer.buildWithScope(SessionStoreConfig.fromUrl(journal), storeScope).pipe(Effect.mapError((e) => new Error(e.message))), SessionStore)
    : undefined
  const t0 = performance.now()
  const rows: Array<Row> = []
  const warmRows: Array<Row> = []
  const total = warmAfter > warmup + n ? warmAfter + n : warmup + n
  for (let i = 0; i < total; i++) {
    const iter = i < warmup ? `warmup ${i}` : i - warmup
    const row = yield* handoffOnce(iter, store).pipe(
      Effect.timeoutOrElse({
        duration: timeoutMs,
        orElse: () => Effect.fail(new Error(`handoff run ${iter}: timeout after ${timeoutMs} ms`))
      })
    )
    if (i >= warmup && i < warmup + n) rows.push(row)
    if (total > warmup + n && i >= warmAfter) warmRows.push(row)
  }
  const times = (of: ReadonlyArray<Row>): HandoffTimes => {
    const col = (k: Exclude<keyof Row, "replyBeforeRunResolved" | "window">) => summarize(of.map((r) => r[k]))
    return {
      toolToReplyDone: col("toolToReplyDone"),
      runToResolved: col("runToResolved"),
      toolToOnEnter: col("toolToOnEnter"),
      onEnterToReplyDone: col("onEnterToReplyDone")
    }
  }
  const out: HandoffResult = {
    n,
    warmup,
    ...times(rows),
    replyDoneBeforeRunResolved: rows.filter((r) => r.replyBeforeRunResolved).length,
    warm: warmRows.length > 0 ? { after: warmAfter, ...times(warmRows) } : undefined,
    wallMs: r3(performance.now() - t0)
  }
  log(
    `handoff: tool->reply done median ${out.toolToReplyDone.medianMs} ms, run()->resolved median ${out.runToResolved.medianMs} ms (N=${n}` +
      `${out.warm ? `; after ${warmAfter} runs: ${out.warm.toolToReplyDone.medianMs} ms` : ""}, ${out.wallMs.toFixed(0)} ms wall)`
  )
  return out
})
