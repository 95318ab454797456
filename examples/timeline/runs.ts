/**
 * The two runs the timeline pictures show: seed 002 (a note saved and a transfer made in one
 * model response: the parallel handoff) and seed 004 (the health service's task group over
 * three user turns). Shared by the picture script (`main.ts`) and the structure tests, so the
 * pictures in docs/ are of the runs the tests check.
 */
import { type Duration, Effect, type Scope } from "effect"
import type { LanguageModel } from "effect/ai"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { AgentSession, type SessionEvent } from "@baton-voice/baton"
import { frontDesk } from "../health-service/agents.ts"
import { turns } from "../health-service/main.ts"
import { rules as healthRules } from "../health-service/script.ts"
import { front } from "../parallel-handoff/agents.ts"
import { rules as parallelRules } from "../parallel-handoff/script.ts"

/** `rules` with every reply taking `latency` before its first part (a model's think time). */
export const withLatency = (rules: ReadonlyArray<ScriptedModel.Rule>, latency: Duration.Input | undefined): ReadonlyArray<ScriptedModel.Rule> =>
  latency === undefined ? rules : rules.map((rule) => ({
    ...rule,
    reply: typeof rule.reply === "function"
      ? ((reply) => (request: ScriptedModel.RecordedRequest) => ({ ...reply(request), delay: latency }))(rule.reply)
      : { ...rule.reply, delay: latency }
  }))

export interface RunOptions {
  /** The model's think time per reply (default none). */
  readonly latency?: Duration.Input
  /** The user's pause between turns (default none). */
  readonly pause?: Duration.Input
}

type Run = Effect.Effect<ReadonlyArray<SessionEvent>, never, Scope.Scope | LanguageModel.LanguageModel>

/** Seed 002: the whole event log of one session, start-up included. */
export const seed002: Run = Effect.gen(function*() {
  // (The runs are given a model: a MissingModel here is a defect of the example.)
  const session = yield* AgentSession.start({ agent: front, userdata: { saved: [] as Array<string> } }).pipe(Effect.orDie)
  yield* session.idle
  yield* session.run("I have a question about my bill").pipe(Effect.orDie)
  return yield* session.eventLog
})

/** Seed 004: the whole event log of the three turns of the health service. */
export const seed004 = (options: RunOptions = {}): Run =>
  Effect.gen(function*() {
    const session = yield* AgentSession.start({ agent: frontDesk }).pipe(Effect.orDie)
    yield* session.idle
    for (const turn of turns) {
      if (options.pause !== undefined) yield* Effect.sleep(options.pause)
      yield* session.run(turn).pipe(Effect.orDie)
    }
    return yield* session.eventLog
  })

export const seed002Model = (options: RunOptions = {}) => ScriptedModel.layer(withLatency(parallelRules, options.latency))
export const seed004Model = (options: RunOptions = {}) => ScriptedModel.layer(withLatency(healthRules, options.latency))
