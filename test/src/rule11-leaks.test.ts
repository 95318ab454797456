/**
 * Rule 11: closing a session closes every actor's Scope; nothing baton started outlives it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../src/index.ts"
import * as Diagnostics from "../../src/Diagnostics.ts"

const task: AgentTask.AgentTask<string> = AgentTask.make<string>({
  name: "confirm",
  instructions: "Confirm.",
  tools: [Tool.make("confirmed", { description: "done", handler: () => AgentTask.complete(task, "yes") })],
  onEnter: Agent.reply({ instructions: "ask to confirm" }).pipe(Effect.asVoid)
})
const b: Agent.Agent = Agent.make({
  name: "b",
  instructions: "B",
  tools: [Tool.make("confirm", { description: "confirm", handler: () => AgentTask.run(task) })],
  onEnter: Agent.reply({ instructions: "b enters" }).pipe(Effect.asVoid)
})
const a: Agent.Agent = Agent.make({
  name: "a",
  instructions: "A",
  tools: [
    Tool.handoff("to_b", () => b),
    Tool.make("wait_forever", { description: "never returns", handler: () => Effect.never })
  ],
  onEnter: Agent.reply({ instructions: "a enters" }).pipe(Effect.asVoid)
})

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { instructions: "a enters" }, reply: { text: "A." } },
  { when: { instructions: "b enters" }, reply: { text: "B." } },
  { when: { instructions: "ask to confirm" }, reply: { text: "Confirm?" } },
  { when: { user: "go" }, reply: { toolCalls: [{ name: "to_b" }, { name: "wait_forever" }] } },
  { when: { user: "hand" }, reply: { toolCalls: [{ name: "to_b" }] } },
  { when: { user: "confirm", agent: "b" }, reply: { toolCalls: [{ name: "confirm" }] } }
]

describe("rule 11: nothing leaks", () => {
  it.live("rule 11: no fiber, scope, actor or session is left after 1,000 sessions", () =>
    Effect.gen(function*() {
      const rejections: Array<unknown> = []
      const onRejection = (reason: unknown) => void rejections.push(reason)
      process.on("unhandledRejection", onRejection)
      const before = Diagnostics.snapshot()
      const timersBefore = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length
      for (let i = 0; i < 1000; i++) {
        const kind = i % 4
        yield* Effect.scoped(Effect.gen(function*() {
          const session = yield* AgentSession.start({ agent: a })
          if (kind === 0) yield* session.run("hand over")
          if (kind === 1) {
            // A tool that never returns and a task left waiting for the user, both cut by close.
            yield* session.run("hand over")
            yield* session.run("confirm please")
          }
          if (kind === 2) yield* session.send("go")
          if (kind === 3) yield* session.close
        }))
      }
      const after = Diagnostics.snapshot()
      process.off("unhandledRejection", onRejection)
      assert.deepStrictEqual(after, { ...before, tokenErrors: 0 })
      assert.deepStrictEqual({ sessions: after.sessions, actors: after.actors, scopes: after.scopes, fibers: after.fibers }, {
        sessions: 0,
        actors: 0,
        scopes: 0,
        fibers: 0
      })
      const timersAfter = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length
      assert.isAtMost(timersAfter, timersBefore)
      assert.deepStrictEqual(rejections, [])
    }).pipe(Effect.provide(ScriptedModel.layer(rules))), 120_000)

  it.effect("rule 11: while open, the counts show the session's actors and fibers", () =>
    Effect.gen(function*() {
      const before = Diagnostics.snapshot()
      const session = yield* AgentSession.start({ agent: a })
      yield* session.run("hand over")
      const open = Diagnostics.snapshot()
      assert.strictEqual(open.sessions - before.sessions, 1)
      assert.strictEqual(open.actors - before.actors, 2)
      assert.isAtLeast(open.fibers - before.fibers, 3)
      yield* session.close
      assert.deepStrictEqual(Diagnostics.snapshot(), before)
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))
})
