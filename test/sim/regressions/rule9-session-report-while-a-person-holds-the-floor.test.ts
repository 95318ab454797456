/**
 * Found by the simulation's take-over draws (seeds 505040, 505727, 516802 of --from 500000).
 *
 * A session tool's background call finished while its caller's batch was still running (waiting
 * for a sibling call), and a person took the floor meanwhile. With a person holding the floor the
 * session records a session tool's reports itself (HumanFloor.ts `recordSessionReports`), but it
 * dropped any whose call's own output was not in history yet, and when that output came nobody
 * was told (only the holder was kicked, and there was none): the finished result was never
 * recorded (rule 9). Such reports now wait for their call's output, which tells the session.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Human, Tool } from "../../../src/index.ts"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

const job = Tool.make("job", {
  description: "a job that belongs to the session",
  handler: (_, { progress }) => progress("job started").pipe(Effect.andThen(Effect.sleep("240 millis")), Effect.as("job finished"))
})

describe("rule 9: background results with a person holding the floor (simulation regression)", () => {
  for (const seed of [505040, 505727, 516802]) {
    it.effect(`rule 9: a session tool's result is recorded while a person holds the floor (seed ${seed})`, () =>
      Effect.gen(function*() {
        const result = yield* simulate(seed, { exclude: DEFAULT_EXCLUDE })
        assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
        // the situation happened: a person took the floor
        assert.isTrue(result.recording.events.some((e) => e.type === "agent_handoff" && e.kind === "take_over"))
      }), 60_000)
  }

  it.effect("rule 9: a session tool's result that came before its call's output is recorded once the output is, under a person", () => {
    const desk = Agent.make({
      name: "desk",
      instructions: "You are the front desk.",
      tools: [Tool.make("check_rooms", { description: "slow", handler: () => Effect.sleep("2 seconds").pipe(Effect.as("two rooms free")) })]
    })
    return Effect.gen(function*() {
      const operator = yield* Human.make({ name: "operator" })
      const session = yield* AgentSession.start({ agent: desk, tools: [job] })
      yield* session.send("any rooms?")
      // The job finishes at 240ms; its own output waits for the batch, so for check_rooms (2s).
      yield* drive(Effect.sleep("500 millis"))
      assert.strictEqual((yield* session.takeOver(operator))._tag, "Applied")
      yield* drive(session.idleWithBackground)
      yield* drive(Effect.sleep("5 seconds"))
      const outputs = (yield* session.history).items.filter((i) => i._tag === "FunctionCallOutput" && i.name === "job")
      assert.deepStrictEqual(outputs.map((o) => o._tag === "FunctionCallOutput" ? [o.callId.split(":")[1] ?? "", o.output, o.agent] : []), [
        ["", "job started", "desk"],
        ["result", "job finished", "session"]
      ])
      assert.strictEqual((yield* session.currentHuman)?.name, "operator")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "any rooms?", agent: "desk" }, reply: { toolCalls: [{ name: "check_rooms" }, { name: "job" }] } }
    ])))
  })
})
