import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Stream } from "effect"
import { LanguageModel } from "effect/ai"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, CurrentAgent, Tool } from "../../src/index.ts"

describe("AgentSession", () => {
  it.effect("publishes typed events on its stream", () => {
    const b = Agent.make({ name: "b", instructions: "B", onEnter: Agent.reply({ instructions: "hello from b" }).pipe(Effect.asVoid) })
    const a = Agent.make({ name: "a", instructions: "A", tools: [Tool.handoff("to_b", () => b)] })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* session.idle
      const collected = yield* session.events.pipe(
        Stream.takeUntil((e) => e.type === "speech_finished" && e.agent === "b"),
        Stream.runCollect,
        Effect.forkChild
      )
      yield* Effect.yieldNow
      yield* session.run("go to b")
      const events = yield* Fiber.join(collected)
      const types = new Set(events.map((e) => e.type))
      for (const type of ["conversation_item_added", "function_tools_executed", "agent_handoff", "speech_created", "speech_finished", "agent_state_changed"]) {
        assert.isTrue(types.has(type as never), `missing ${type}`)
      }
      const executed = events.find((e) => e.type === "function_tools_executed")
      assert.isTrue(executed?.type === "function_tools_executed" && executed.hasHandoff && executed.handoffTo === "b")
      assert.deepStrictEqual(events.map((e) => e.seq), [...events.map((e) => e.seq)].sort((x, y) => x - y))
      yield* session.close
      const log = yield* session.eventLog
      assert.strictEqual(log.at(-1)?.type, "close")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "go to b" }, reply: { toolCalls: [{ name: "to_b" }] } },
      { when: { instructions: "hello from b" }, reply: { text: "Hello from B." } }
    ])))
  })

  it.effect("stops calling tools after maxToolSteps and asks for words", () => {
    const loop = Agent.make({
      name: "looper",
      instructions: "L",
      maxToolSteps: 2,
      tools: [Tool.make("again", { description: "", handler: () => Effect.succeed("again!") })]
    })
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: loop })
      const result = yield* session.run("loop")
      assert.deepStrictEqual(model.requests.map((r) => r.toolChoice), ["auto", "auto", "none"])
      assert.strictEqual(result.finalOutput, "I have to stop here.")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: (r) => r.toolChoice === "none", reply: { text: "I have to stop here." } },
      { when: () => true, reply: { toolCalls: [{ name: "again" }] } }
    ])))
  })

  it.effect("an agent's own model is used for it; the session's for the others", () => {
    const own: Layer.Layer<LanguageModel.LanguageModel> = ScriptedModel.layer([
      { when: () => true, reply: { text: "from the agent's own model" } }
    ])
    const special = Agent.make({ name: "special", instructions: "S", model: own })
    const plain = Agent.make({ name: "plain", instructions: "P", tools: [Tool.handoff("to_special", () => special)] })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: plain })
      const first = yield* session.run("hello")
      assert.strictEqual(first.finalOutput, "from the session model")
      yield* session.run("switch")
      const second = yield* session.run("hello again")
      assert.strictEqual(second.finalOutput, "from the agent's own model")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "switch" }, reply: { toolCalls: [{ name: "to_special" }] } },
      { when: () => true, reply: { text: "from the session model" } }
    ])))
  })

  it.effect("without any language model, start fails with MissingModel naming the agent and how to give it one", () => {
    const mute = Agent.make({ name: "mute", instructions: "M" })
    return Effect.gen(function*() {
      const missing = yield* AgentSession.start({ agent: mute }).pipe(Effect.flip)
      assert.strictEqual(missing._tag, "MissingModel")
      assert.strictEqual(missing.agent, "mute")
      assert.include(missing.message, "mute has no language model")
      assert.include(missing.message, "Agent.make({ model })")
    })
  })

  it.effect("an agent whose own model fails to build: its reply fails with MissingModel, typed, and the session goes on", () => {
    const broken = Agent.make({ name: "broken", instructions: "B", model: Layer.effect(LanguageModel.LanguageModel, Effect.fail("no key")) })
    return Effect.gen(function*() {
      // It has a model of its own, so start takes it; the model is found missing as it replies.
      const session = yield* AgentSession.start({ agent: broken })
      // the turn got no answer: run fails with TurnFailed, which carries the error and the result
      const failed = yield* session.run("hello?").pipe(Effect.flip)
      assert.strictEqual(failed._tag, "TurnFailed")
      if (failed._tag !== "TurnFailed") return
      assert.isTrue(failed.errors.some((e) => e.source === "model" && e.message === "broken has no language model: provide one where the session starts (a LanguageModel layer, such as OpenAiChat.layerConfigFetch or ScriptedModel.layer) or give the agent its own (Agent.make({ model }))"))
      assert.include(failed.message, "has no language model")
      assert.isTrue(failed.result.events.some((e) => e.type === "message" && e.role === "user" && e.content === "hello?"))
      // the session goes on: the next turn is taken (and fails the same way, typed)
      const again = yield* session.run("still there?").pipe(Effect.flip)
      assert.strictEqual(again._tag, "TurnFailed")
    })
  })

  it.effect("after close, run, send and pushAudio fail with SessionClosed instead of succeeding silently", () => {
    const a = Agent.make({ name: "a", instructions: "A" })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* session.run("hello")
      yield* session.close
      const run = yield* session.run("are you there?").pipe(Effect.flip)
      assert.strictEqual(run._tag, "SessionClosed")
      assert.include(run.message, "is closed")
      assert.strictEqual((yield* session.send("hi").pipe(Effect.flip))._tag, "SessionClosed")
      assert.strictEqual((yield* session.pushAudio(new Uint8Array(2)).pipe(Effect.flip))._tag, "SessionClosed")
      // nothing was recorded for the refused input
      const history = yield* session.history
      assert.isFalse(history.items.some((i) => i._tag === "Message" && i.text === "are you there?"))
    }).pipe(Effect.provide(ScriptedModel.layer([{ when: () => true, reply: { text: "hi" } }])))
  })

  it.effect("rule 2: a FloorError says why: a handle of an agent that passed the floor (not_holder), a closed session (session_closed)", () => {
    let kept: CurrentAgent["Service"] | undefined
    const b = Agent.make({ name: "b", instructions: "B" })
    const a = Agent.make({
      name: "a",
      instructions: "A",
      onEnter: CurrentAgent.use((handle) => Effect.sync(() => void (kept = handle))),
      tools: [Tool.handoff("to_b", () => b)]
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* session.run("go to b")
      assert.strictEqual((yield* session.currentAgent)?.name, "b")
      const late = yield* kept!.say("still here?").pipe(Effect.flip)
      assert.deepInclude(late, { _tag: "FloorError", agent: "a", reason: "not_holder" })
      yield* session.close
      const closed = yield* session.say("anyone?").pipe(Effect.flip)
      assert.deepInclude(closed, { _tag: "FloorError", reason: "session_closed" })
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "go to b" }, reply: { toolCalls: [{ name: "to_b" }] } },
      { when: () => true, reply: { text: "ok" } }
    ])))
  })

  it.effect("user text over maxInputChars is refused with InvalidInput and nothing is recorded", () => {
    const a = Agent.make({ name: "a", instructions: "A" })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a, maxInputChars: 10 })
      const refused = yield* session.run("x".repeat(11)).pipe(Effect.flip)
      assert.strictEqual(refused._tag, "InvalidInput")
      assert.include(refused.message, "11 characters, over the limit of 10")
      assert.strictEqual((yield* session.send("y".repeat(11)).pipe(Effect.flip))._tag, "InvalidInput")
      const ok = yield* session.run("short")
      assert.strictEqual(ok.finalOutput, "hi")
      const history = yield* session.history
      assert.deepStrictEqual(history.items.flatMap((i) => (i._tag === "Message" && i.role === "user" ? [i.text] : [])), ["short"])
    }).pipe(Effect.provide(ScriptedModel.layer([{ when: () => true, reply: { text: "hi" } }])))
  })
})
