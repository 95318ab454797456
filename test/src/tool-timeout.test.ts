/**
 * Per-tool timeout (issue 37): a call running past its tool's `timeout` is interrupted, answered
 * once with an output telling the model it timed out (rule 4), and an `error` event says so; under
 * TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { drive } from "../../layers/testing/Drive.ts"
import { mockTools } from "../../layers/testing/index.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, type ErrorEvent, Tool } from "../../src/index.ts"
import { assertEveryCallAnswered } from "../helpers.ts"

const model = ScriptedModel.layer([
  { when: { user: "go" }, reply: { toolCalls: [{ name: "slow", arguments: { seconds: 10 } }] } },
  { when: { user: "quick" }, reply: { toolCalls: [{ name: "slow", arguments: { seconds: 2 } }] } },
  { when: { user: "both" }, reply: { toolCalls: [{ name: "slow", arguments: { seconds: 10 } }, { name: "fast" }] } },
  { when: { toolOutput: "timed out" }, reply: { text: "Sorry, that took too long." } },
  { when: { toolOutput: "hold on" }, reply: { text: "Please hold on." } },
  { when: { toolOutput: /./ }, reply: (r) => ({ text: `Got: ${r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join(" | ") : ""}` }) }
])

const slowTool = (stopped: { count: number }, options: { readonly progress?: boolean } = {}) =>
  Tool.make("slow", {
    description: "Takes its time",
    parameters: Schema.Struct({ seconds: Schema.Number }),
    timeout: "5 seconds",
    handler: ({ seconds }, { progress }) =>
      (options.progress ? progress("Working on it, please hold on") : Effect.void).pipe(
        Effect.andThen(Effect.sleep(`${seconds} seconds`)),
        Effect.as(`done after ${seconds}s`),
        Effect.onInterrupt(() => Effect.sync(() => void stopped.count++))
      )
  })
const fast = Tool.make("fast", { description: "Quick", handler: () => Effect.succeed("fast done") })

const start = (agent: Agent.Agent) =>
  Effect.gen(function*() {
    const session = yield* AgentSession.start({ agent })
    return session
  })

const toolErrors = (events: ReadonlyArray<{ readonly type: string }>) =>
  events.filter((e): e is ErrorEvent => e.type === "error" && (e as ErrorEvent).source === "tool")

describe("tool timeout", () => {
  it.effect("tool timeout: a call past its timeout is interrupted, answered once as timed out, the model told, an error event says so", () =>
    Effect.gen(function*() {
      const stopped = { count: 0 }
      const agent = Agent.make({ name: "a", instructions: "A", tools: [slowTool(stopped)] })
      const session = yield* start(agent)
      const t0 = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
      const result = yield* drive(session.run("go"))
      assert.strictEqual(stopped.count, 1, "the handler was interrupted")
      const output = result.expect.containsFunctionCallOutput({ name: "slow", isError: true, status: "error" })
      assert.strictEqual(output.output, "slow timed out after 5s and was stopped: it has no result.")
      result.expect.containsMessage({ role: "assistant", content: "Sorry, that took too long." })
      const errors = toolErrors(result.sessionEvents)
      assert.strictEqual(errors.length, 1)
      assert.strictEqual(errors[0]!.reason, "Timeout")
      assert.isTrue(errors[0]!.recoverable)
      assert.include(errors[0]!.message, "slow timed out after 5s")
      // Answered at the limit, not when the handler would have ended.
      const executed = result.sessionEvents.find((e) => e.type === "function_tools_executed")!
      assert.isAtLeast(executed.at - t0, 5000)
      assert.isBelow(executed.at - t0, 6000)
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(model)))

  it.effect("tool timeout: a call ending before its timeout is answered by its result", () =>
    Effect.gen(function*() {
      const stopped = { count: 0 }
      const agent = Agent.make({ name: "a", instructions: "A", tools: [slowTool(stopped)] })
      const session = yield* start(agent)
      const result = yield* drive(session.run("quick"))
      assert.strictEqual(stopped.count, 0)
      result.expect.containsFunctionCallOutput({ name: "slow", output: "done after 2s", isError: false })
      assert.strictEqual(toolErrors(result.sessionEvents).length, 0)
    }).pipe(Effect.provide(model)))

  it.effect("tool timeout: in a batch, only the late call times out; its sibling keeps its result", () =>
    Effect.gen(function*() {
      const stopped = { count: 0 }
      const agent = Agent.make({ name: "a", instructions: "A", tools: [slowTool(stopped), fast] })
      const session = yield* start(agent)
      const result = yield* drive(session.run("both"))
      result.expect.containsFunctionCallOutput({ name: "fast", output: "fast done" })
      result.expect.containsFunctionCallOutput({ name: "slow", output: /timed out/, isError: true })
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(model)))

  it.effect("tool timeout: a long-running tool's progress answers the call; at the timeout its final result is the timeout", () =>
    Effect.gen(function*() {
      const stopped = { count: 0 }
      const agent = Agent.make({ name: "a", instructions: "A", tools: [slowTool(stopped, { progress: true })] })
      const session = yield* start(agent)
      const first = yield* drive(session.run("go"))
      first.expect.containsFunctionCallOutput({ name: "slow", output: "Working on it, please hold on", status: "progress" })
      assert.strictEqual(toolErrors(first.sessionEvents).length, 0)
      // The background call is told when it ends: at 5 s, as timed out.
      yield* drive(Effect.gen(function*() {
        while (stopped.count === 0) yield* Effect.sleep("100 millis")
      }))
      yield* drive(session.idle)
      const history = yield* session.history
      const final = history.items.find((i) => i._tag === "FunctionCallOutput" && i.callId.endsWith(":result"))
      assert.isDefined(final)
      assert.include(final!._tag === "FunctionCallOutput" ? final!.output : "", "slow timed out after 5s")
      const events = yield* session.eventLog
      assert.strictEqual(toolErrors(events).filter((e) => e.reason === "Timeout").length, 1)
      assertEveryCallAnswered(history)
    }).pipe(Effect.provide(model)))

  it.effect("tool timeout: applies to a mock of the tool too", () =>
    Effect.gen(function*() {
      const stopped = { count: 0 }
      const agent = Agent.make({ name: "a", instructions: "A", tools: [slowTool(stopped)] })
      const result = yield* Effect.gen(function*() {
        const session = yield* start(agent)
        return yield* drive(session.run("quick"))
      }).pipe(Effect.provide(mockTools(agent, { slow: () => Effect.never })))
      result.expect.containsFunctionCallOutput({ name: "slow", output: /timed out after 5s/, isError: true })
    }).pipe(Effect.provide(model)))

  it("tool timeout: a bad or non-positive timeout is refused when the tool is made", () => {
    const make = (timeout: any) => Tool.make("t", { description: "", timeout, handler: () => Effect.void })
    assert.throws(() => make("soon"), /Tool "t": timeout must be a positive duration such as "5 seconds", got soon/)
    assert.throws(() => make(0), /timeout must be a positive duration/)
    assert.throws(() => make("-1 seconds"), /timeout must be a positive duration/)
    assert.strictEqual(make("250 millis").options.timeout !== undefined, true)
  })
})
