/**
 * Session start and close, one session at a time (as bench/agents-js/bench.mjs does). Each
 * session gets a fresh scripted model and a fresh agent without hooks.
 *   start           `AgentSession.start` until the session is idle (the agent's actor is up)
 *   close           `session.close` on that same session, which never had a turn
 *   closeAfterTurn  `session.close` on a second fresh session that first ran one turn
 *                   ("hi" answered "hello", checked)
 */
import { Effect, Layer } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession } from "../../src/index.ts"
import { envInt, log, r3, type Summary, summarize } from "./stats.ts"

export interface LifecycleResult {
  readonly n: number
  readonly warmup: number
  readonly start: Summary
  /** `AgentSession.start` alone: it returns before the agent's actor is up. */
  readonly startCall: Summary
  readonly close: Summary
  readonly closeAfterTurn: Summary
  readonly wallMs: number
}

export const rules: ReadonlyArray<ScriptedModel.Rule> = [{ when: { user: "hi" }, reply: { text: "hello" } }]

/** A fresh idle session with its own scripted model and agent, in the current Scope. */
export const startIdle = Effect.gen(function*() {
  const models = yield* Layer.build(ScriptedModel.layer(rules))
  const agent = Agent.make({ name: "agent", instructions: "You are a test agent" })
  const t0 = performance.now()
  const session = yield* AgentSession.start({ agent }).pipe(Effect.provideContext(models))
  const t1 = performance.now()
  yield* session.idle
  return { session, startCall: t1 - t0, start: performance.now() - t0 }
})

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const t0 = performance.now()
    yield* effect
    return performance.now() - t0
  })

export const benchLifecycle: Effect.Effect<LifecycleResult, Error> = Effect.gen(function*() {
  const n = envInt("LIFECYCLE_N", 20)
  const warmup = envInt("LIFECYCLE_WARMUP", 3)
  const t0 = performance.now()
  const start: Array<number> = []
  const startCall: Array<number> = []
  const close: Array<number> = []
  const closeAfterTurn: Array<number> = []
  for (let i = 0; i < warmup + n; i++) {
    const measured = i >= warmup
    yield* Effect.scoped(Effect.gen(function*() {
      const s = yield* startIdle
      const dClose = yield* timed(s.session.close)
      if (measured) {
        start.push(s.start)
        startCall.push(s.startCall)
        close.push(dClose)
      }
    }))
    yield* Effect.scoped(Effect.gen(function*() {
      const { session } = yield* startIdle
      const result = yield* session.run("hi")
      const last = result.events[result.events.length - 1]
      if (last?.type !== "message" || last.content !== "hello") {
        return yield* Effect.fail(new Error(`lifecycle ${i}: the one-turn run did not answer "hello"`))
      }
      const dClose = yield* timed(session.close)
      if (measured) closeAfterTurn.push(dClose)
    }))
  }
  const out: LifecycleResult = {
    n,
    warmup,
    start: summarize(start),
    startCall: summarize(startCall),
    close: summarize(close),
    closeAfterTurn: summarize(closeAfterTurn),
    wallMs: r3(performance.now() - t0)
  }
  log(
    `lifecycle: start median ${out.start.medianMs} ms, close median ${out.close.medianMs} ms, close after a turn median ${out.closeAfterTurn.medianMs} ms`
  )
  return out
})
