/**
 * Found by the simulation (seed 16603, shrunk; it failed at f941bcd already).
 *
 * A session tool reports progress while the holder cannot take it yet (its onEnter waits for the
 * previous holder's slow onExit), so the report waits in the session's queue. Then the session
 * closes. The close cancelled the session's background calls first, and the cancelled result was
 * recorded at once; the progress report that came before it was flushed afterwards. History then
 * had the call's progress after its result (rule 9: the reports of a background call in order).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Tool } from "../../../src/index.ts"
import { DEFAULT_EXCLUDE, simulate } from "../Sim.ts"

describe("rule 9: deferred handoffs (simulation regression)", () => {
  it.effect("rule 9: a session tool's progress reported before the close is recorded before the result the close gives it", () => {
    const b = Agent.make({ name: "b", instructions: "B" })
    const a = Agent.make({
      name: "a",
      instructions: "A",
      // B's onEnter waits for this: B holds its input (and the report) meanwhile.
      onExit: Effect.sleep("2 seconds"),
      tools: [Tool.handoff("to_b", () => b)]
    })
    const job = Tool.make("job", {
      description: "a long job of the session",
      handler: (_, { progress }) =>
        progress("job started").pipe(
          Effect.andThen(Effect.sleep("500 millis")),
          Effect.andThen(progress("half way")),
          Effect.andThen(Effect.sleep("10 seconds")),
          Effect.as("job done")
        )
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a, tools: [job] })
      yield* session.send("go")
      // The job reports "half way" at 500 ms, while B still waits for A's onExit; the close
      // comes before B can take the report.
      yield* drive(Effect.sleep("1 second"))
      yield* session.close
      const outputs = (yield* session.history).items.flatMap((i) =>
        i._tag === "FunctionCallOutput" && i.name === "job" ? [`${i.status}: ${i.output}`] : []
      )
      assert.deepStrictEqual(outputs, [
        "progress: job started",
        "progress: half way",
        "cancelled: job was cancelled: the session closed."
      ])
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "go", agent: "a" }, reply: { toolCalls: [{ name: "to_b" }, { name: "job" }] } }
    ])))
  })

  it.effect("rule 9: seed 16603 keeps a session tool's reports in order at close", () =>
    Effect.gen(function*() {
      const result = yield* simulate(16603, { exclude: DEFAULT_EXCLUDE, programUses: false })
      assert.deepStrictEqual(result.violations.map((v) => `${v.rule}: ${v.message}`), [])
    }), 60_000)
})
