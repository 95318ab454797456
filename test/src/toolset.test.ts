/**
 * Toolsets (the core seam MCP servers use): a toolset in an agent's `tools` is opened in the
 * actor's Scope when the actor starts, before its first model call; its tools are offered and
 * called like the agent's own; when its version moves, the next model call offers the new list;
 * the Scope closing closes what it opened; a toolset that cannot be opened is an `error` event
 * and the agent goes on. What a toolset needs is in the agent's type.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { drive } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, Tool, Toolset } from "../../src/index.ts"

const echo = (name: string) =>
  Tool.make(name, {
    description: `Echoes for ${name}`,
    parameters: Schema.Struct({ text: Schema.String }),
    handler: ({ text }) => Effect.succeed(`${name}: ${text}`)
  })

/** A toolset whose list a test changes, recording when it was opened and closed. */
const controlled = () => {
  const record = { opened: 0, closed: 0, tools: [echo("first")] as ReadonlyArray<Tool.Tool<unknown, never>>, version: 0 }
  const toolset = Toolset.make(
    "controlled",
    Effect.acquireRelease(
      Effect.sync(() => {
        record.opened++
        return { tools: () => record.tools, version: () => record.version } satisfies Toolset.Source
      }),
      () => Effect.sync(() => void record.closed++)
    )
  )
  const change = (tools: ReadonlyArray<Tool.Tool<unknown, never>>) => {
    record.tools = tools
    record.version++
  }
  return { record, toolset, change }
}

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "use first" }, reply: { toolCalls: [{ name: "first", arguments: { text: "hi" } }] } },
  { when: { user: "use second" }, reply: { toolCalls: [{ name: "second", arguments: { text: "there" } }] } },
  { when: { toolOutput: /.*/ }, reply: { text: "Done." } },
  { when: () => true, reply: { text: "Hello." } }
]

describe("Toolset", () => {
  it.effect("a toolset is opened when the actor starts: its tools are offered beside the agent's and called like them", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const { record, toolset } = controlled()
      const agent = Agent.make({ name: "host", instructions: "Help.", tools: [echo("own"), toolset] })
      const session = yield* AgentSession.start({ agent })
      const result = yield* drive(session.run("use first"))
      assert.strictEqual(record.opened, 1)
      assert.deepStrictEqual([...model.requests[0]!.tools].sort(), ["first", "own"])
      result.expect.containsFunctionCallOutput({ name: "first", output: "first: hi", isError: false })
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules))))

  it.effect("when a toolset's version moves, the next model call offers its new list", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const { change, toolset } = controlled()
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "host", instructions: "Help.", tools: [toolset] }) })
      yield* drive(session.run("hello"))
      change([echo("first"), echo("second")])
      const result = yield* drive(session.run("use second"))
      assert.deepStrictEqual([...model.requests[model.requests.length - 2]!.tools].sort(), ["first", "second"])
      result.expect.containsFunctionCallOutput({ name: "second", output: "second: there", isError: false })
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules))))

  it.effect("what a toolset opened closes with the session", () =>
    Effect.gen(function*() {
      const { record, toolset } = controlled()
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent: Agent.make({ name: "host", instructions: "Help.", tools: [toolset] }) })
        yield* drive(session.run("hello"))
        assert.strictEqual(record.closed, 0)
      }).pipe(Effect.scoped)
      assert.deepStrictEqual([record.opened, record.closed], [1, 1])
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))

  it.effect("a toolset that cannot be opened is an error event with its message, and the agent goes on with its other tools", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const broken = Toolset.make("broken", Effect.fail(new Toolset.ToolsetError({ toolset: "broken", message: "broken could not start: run it by hand" })))
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "host", instructions: "Help.", tools: [echo("own"), broken] }) })
      const result = yield* drive(session.run("hello"))
      result.expect.containsMessage({ role: "assistant", content: "Hello." })
      assert.deepStrictEqual(model.requests[0]!.tools, ["own"])
      const errors = (yield* session.eventLog).filter((e) => e.type === "error")
      assert.deepStrictEqual(errors.map((e) => e.type === "error" && [e.source, e.message]), [["tool", "broken could not start: run it by hand"]])
    }).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer(rules))))
})

// Type check (tsc): what opening a toolset needs is what the agent, and its session, need.
class Directory extends Context.Service<Directory, { readonly url: string }>()("test/Directory") {}
const needsDirectory = Toolset.make("directory", Effect.map(Effect.service(Directory), () => ({ tools: () => [], version: () => 0 })))
const withDirectory = Agent.make({ name: "dir", instructions: "Dir.", tools: [needsDirectory] })
const _typed: Agent.Agent<Directory> = withDirectory
// @ts-expect-error an agent holding a toolset that needs Directory is not an agent that needs nothing
const _untyped: Agent.Agent = withDirectory
const _provided = AgentSession.start({ agent: withDirectory }).pipe(
  Effect.scoped,
  Effect.provide(Layer.succeed(Directory, { url: "ldap://" })),
  Effect.provide(ScriptedModel.layer([]))
)
void _typed
void _untyped
void _provided
