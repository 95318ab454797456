/**
 * The rules hold for every use of the API a program can make, not only the ones the simulation
 * drew first: a tool that awaits a reply it started, a hook that awaits a reply whose tool runs
 * a task, a handler returning a value JSON cannot hold, and one state change per step.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, AgentTask, Tool } from "../../src/index.ts"
import type { SessionEvent } from "../../src/Events.ts"

const order = (capture: TextCapture.TextCaptureService) => capture.writes.map((w) => `${w.agent}: ${w.text}`)

const outputsOf = (events: ReadonlyArray<SessionEvent>) =>
  events.flatMap((e) => (e.type === "function_tools_executed" ? e.calls.map((c) => c.output) : []))

describe("rule 10: a tool that awaits a reply it started", () => {
  it.effect("the run resolves; the words are heard before the tool's output reaches the model", () =>
    Effect.gen(function*() {
      const main = Agent.make({
        name: "main",
        instructions: "Main.",
        tools: [Tool.make("hang_up", {
          description: "Say goodbye, then hang up",
          handler: () =>
            Agent.reply({ instructions: "say goodbye" }).pipe(
              Effect.flatMap((handle) => handle.wait),
              Effect.map((outcome) => `hung up after the goodbye (${outcome._tag})`)
            )
        })]
      })
      const session = yield* AgentSession.start({ agent: main })
      yield* session.run("bye")
      const capture = yield* TextCapture.TextCapture
      assert.deepStrictEqual(order(capture), ["main: Goodbye, take care!", "main: Call ended."])
      const outputs = outputsOf(yield* session.eventLog)
      assert.strictEqual(outputs.length, 1)
      assert.strictEqual(outputs[0]!.output, "hung up after the goodbye (Finished)")
      // The goodbye is in the context before the tool's output (the order the model sees).
      const history = yield* session.history
      const kinds = history.items.flatMap((item) =>
        item._tag === "Message" && item.role === "assistant" ? [`said: ${item.text}`]
          : item._tag === "FunctionCallOutput" ? [`output: ${item.output}`]
          : []
      )
      assert.deepStrictEqual(kinds, [
        "said: Goodbye, take care!",
        "output: hung up after the goodbye (Finished)",
        "said: Call ended."
      ])
      // A later turn still runs.
      yield* session.run("anyone there?")
      assert.strictEqual(order(capture).at(-1), "main: Still here.")
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, ScriptedModel.layer([
      { when: { user: "bye", agent: "main" }, reply: { toolCalls: [{ name: "hang_up" }] } },
      { when: { instructions: "say goodbye" }, reply: { text: "Goodbye, take care!" } },
      { when: { toolOutput: "hung up" }, reply: { text: "Call ended." } },
      { when: { user: "anyone" }, reply: { text: "Still here." } }
    ])))))

  it.effect("a reply awaited by a tool can call tools of its own, which can say and await words too", () =>
    Effect.gen(function*() {
      const main = Agent.make({
        name: "main",
        instructions: "Main.",
        tools: [
          Tool.make("outer", {
            description: "outer",
            handler: () => Agent.reply({ instructions: "nested please" }).pipe(Effect.flatMap((h) => h.wait), Effect.as("outer done"))
          }),
          Tool.make("inner", {
            description: "inner",
            handler: () => Agent.say("Inner words.").pipe(Effect.flatMap((h) => h.wait), Effect.as("inner done"))
          })
        ]
      })
      const session = yield* AgentSession.start({ agent: main })
      yield* session.run("go")
      const capture = yield* TextCapture.TextCapture
      assert.deepStrictEqual(order(capture), ["main: Inner words.", "main: Nested finished.", "main: All finished."])
      assert.deepStrictEqual(outputsOf(yield* session.eventLog).map((o) => o.output), ["inner done", "outer done"])
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, ScriptedModel.layer([
      { when: { user: "go" }, reply: { toolCalls: [{ name: "outer" }] } },
      { when: { instructions: "nested please" }, reply: { toolCalls: [{ name: "inner" }] } },
      { when: { toolOutput: "inner done" }, reply: { text: "Nested finished." } },
      { when: { toolOutput: "outer done" }, reply: { text: "All finished." } }
    ])))))
})

describe("rule 10: a reply a tool started (not awaited) whose own tool runs a task", () => {
  it.effect("the run resolves while the task waits for the user; the answer reaches the task, then the agent goes on", () =>
    Effect.gen(function*() {
      const askName: AgentTask.AgentTask<string> = AgentTask.make<string>({
        name: "ask_name",
        instructions: "Ask the caller's name.",
        onEnter: Agent.say("Your name?").pipe(Effect.asVoid),
        tools: [Tool.make("record_name", { description: "Record", handler: () => AgentTask.complete(askName, "Ada") })]
      })
      const main = Agent.make({
        name: "main",
        instructions: "Main.",
        tools: [
          Tool.make("start_intake", { description: "start", handler: () => Agent.reply({ instructions: "run the intake" }).pipe(Effect.as("intake started")) }),
          Tool.make("get_name", { description: "name", handler: () => AgentTask.run(askName) })
        ]
      })
      const session = yield* AgentSession.start({ agent: main })
      yield* session.run("sign me up")
      const capture = yield* TextCapture.TextCapture
      assert.deepStrictEqual(order(capture), ["ask_name: Your name?"])
      yield* session.run("Ada")
      assert.strictEqual(order(capture).at(-1), "main: Welcome, Ada.")
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, ScriptedModel.layer([
      { when: { user: "sign me up" }, reply: { toolCalls: [{ name: "start_intake" }] } },
      { when: { instructions: "run the intake" }, reply: { toolCalls: [{ name: "get_name" }] } },
      { when: { agent: "ask_name", user: "Ada" }, reply: { toolCalls: [{ name: "record_name" }] } },
      { when: { agent: "main", toolOutput: "Ada" }, reply: { text: "Welcome, Ada." } },
      { when: { agent: "main", toolOutput: "intake started" }, reply: { text: "Intake running." } }
    ])))))
})

describe("rule 4: a tool that waits for the speech it was called in", () => {
  it.effect("gets an error output saying why (it would wait for ever), and the run resolves", () =>
    Effect.gen(function*() {
      const main = Agent.make({
        name: "main",
        instructions: "Main.",
        tools: [Tool.make("wait_for_myself", {
          description: "waits",
          handler: (_, context) => context.speech.wait.pipe(Effect.as("never"))
        })]
      })
      const session = yield* AgentSession.start({ agent: main })
      yield* session.run("go")
      const outputs = outputsOf(yield* session.eventLog)
      assert.strictEqual(outputs.length, 1)
      assert.isTrue(outputs[0]!.isError)
      const errors = (yield* session.eventLog).flatMap((e) => (e.type === "error" ? [e.message] : []))
      assert.isTrue(errors.some((m) => m.includes("cannot wait for the speech it was called in")))
      const capture = yield* TextCapture.TextCapture
      assert.strictEqual(order(capture).at(-1), "main: That did not work.")
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, ScriptedModel.layer([
      { when: { user: "go" }, reply: { toolCalls: [{ name: "wait_for_myself" }] } },
      { when: { agent: "main" }, reply: { text: "That did not work." } }
    ])))))
})

describe("rule 10: a handoff made from words spoken before the first run", () => {
  it.effect("the greeting's tool hands off while the hook waits for it; the first run reaches the new agent", () =>
    Effect.gen(function*() {
      const billing = Agent.make({ name: "billing", instructions: "Billing.", onEnter: Agent.say("Billing here.").pipe(Effect.asVoid) })
      const front = Agent.make({
        name: "front",
        instructions: "Front.",
        onEnter: Agent.reply({ instructions: "greet" }).pipe(Effect.flatMap((h) => h.wait), Effect.asVoid),
        tools: [Tool.handoff("to_billing", () => billing)]
      })
      const session = yield* AgentSession.start({ agent: front })
      yield* session.idle
      assert.strictEqual((yield* session.currentAgent)?.name, "billing")
      yield* session.run("my invoice")
      const capture = yield* TextCapture.TextCapture
      assert.deepStrictEqual(order(capture), ["billing: Billing here.", "billing: Your invoice is paid."])
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, ScriptedModel.layer([
      { when: { instructions: "greet" }, reply: { toolCalls: [{ name: "to_billing" }] } },
      { when: { agent: "billing", user: "invoice" }, reply: { text: "Your invoice is paid." } }
    ])))))
})

describe("rule 10: a hook that awaits a reply whose tool runs a task", () => {
  const agents = () => {
    const askName: AgentTask.AgentTask<string> = AgentTask.make<string>({
      name: "ask_name",
      instructions: "Ask the caller's name.",
      onEnter: Agent.reply().pipe(Effect.asVoid),
      tools: [Tool.make("record_name", {
        description: "Record the name",
        parameters: Schema.Struct({ name: Schema.String }),
        handler: ({ name }) => AgentTask.complete(askName, name)
      })]
    })
    return Agent.make({
      name: "front",
      instructions: "Front desk.",
      // Waits for its own greeting, whose tool runs a task that talks to the user.
      onEnter: Agent.reply({ instructions: "greet and get the name" }).pipe(Effect.flatMap((h) => h.wait), Effect.asVoid),
      tools: [Tool.make("get_name", { description: "Get the caller's name", handler: () => AgentTask.run(askName) })]
    })
  }

  it.effect("the session goes quiet while the task waits for the user, and each run reaches the holder", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: agents() })
      yield* session.idle
      const capture = yield* TextCapture.TextCapture
      assert.deepStrictEqual(order(capture), ["ask_name: What is your name?"])
      yield* session.run("I am Ada")
      assert.deepStrictEqual(order(capture), ["ask_name: What is your name?", "front: Welcome, Ada."])
      yield* session.run("thanks")
      assert.strictEqual(order(capture).at(-1), "front: You are welcome.")
      const events = yield* session.eventLog
      // The greeting's hook ended once its reply had: one onEnter, finished.
      assert.isFalse(events.some((e) => e.type === "error"))
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, ScriptedModel.layer([
      { when: { instructions: "greet and get the name" }, reply: { toolCalls: [{ name: "get_name" }] } },
      { when: { agent: "ask_name", user: /Ada/ }, reply: { toolCalls: [{ name: "record_name", arguments: { name: "Ada" } }] } },
      { when: { agent: "ask_name" }, reply: { text: "What is your name?" } },
      { when: { agent: "front", toolOutput: "Ada" }, reply: { text: "Welcome, Ada." } },
      { when: { agent: "front", user: "thanks" }, reply: { text: "You are welcome." } }
    ])))))
})

describe("rule 4: every value a tool returns becomes an output", () => {
  const cyclic = (): unknown => {
    const a: Record<string, unknown> = { name: "a" }
    a.self = a
    return a
  }
  class Point {
    readonly x: number
    readonly y: number
    constructor(x: number, y: number) {
      this.x = x
      this.y = y
    }
  }
  const values: ReadonlyArray<readonly [string, () => unknown, (output: string, isError: boolean) => void]> = [
    ["a cyclic object", cyclic, (o, e) => {
      assert.isFalse(e)
      assert.include(o, "\"name\":\"a\"")
      assert.include(o, "[Circular]")
    }],
    ["a BigInt", () => 12345678901234567890n, (o, e) => {
      assert.isFalse(e)
      assert.strictEqual(o, "12345678901234567890")
    }],
    ["an object holding a BigInt", () => ({ id: 7n }), (o) => assert.strictEqual(o, "{\"id\":\"7\"}")],
    ["a function", () => function lookup() {}, (o, e) => {
      assert.isTrue(e)
      assert.include(o, "returned a function")
    }],
    ["a symbol", () => Symbol("x"), (o, e) => {
      assert.isTrue(e)
      assert.include(o, "returned a symbol")
    }],
    ["a class instance", () => new Point(1, 2), (o) => assert.strictEqual(o, "{\"x\":1,\"y\":2}")],
    ["a Map and a Set", () => ({ m: new Map([["k", 1]]), s: new Set([1, 2]) }), (o) => assert.strictEqual(o, "{\"m\":{\"k\":1},\"s\":[1,2]}")],
    ["a toJSON that throws", () => ({ toJSON: () => { throw new Error("nope") } }), (o, e) => {
      assert.isTrue(e)
      assert.include(o, "could not be turned into text")
      assert.include(o, "nope")
    }],
    ["a very large value", () => "x".repeat(100_000), (o, e) => {
      assert.isFalse(e)
      assert.isBelow(o.length, 20_000)
      assert.match(o, /cut: \d+ more characters/)
    }]
  ]
  for (const [what, value, check] of values) {
    for (const slept of [false, true]) {
      it.effect(`${what}${slept ? ", after the handler slept" : ""}: the call is answered and the run resolves`, () =>
        Effect.gen(function*() {
          const main = Agent.make({
            name: "main",
            instructions: "Main.",
            tools: [Tool.make("fetch", {
              description: "fetch",
              handler: () => (slept ? Effect.yieldNow : Effect.void).pipe(Effect.map(value))
            })]
          })
          const session = yield* AgentSession.start({ agent: main })
          yield* session.run("fetch it")
          const outputs = outputsOf(yield* session.eventLog)
          assert.strictEqual(outputs.length, 1)
          check(outputs[0]!.output, outputs[0]!.isError)
          const capture = yield* TextCapture.TextCapture
          assert.strictEqual(order(capture).at(-1), "main: Got it.")
        }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, ScriptedModel.layer([
          { when: { user: "fetch it" }, reply: { toolCalls: [{ name: "fetch" }] } },
          { when: { agent: "main" }, reply: { text: "Got it." } }
        ])))))
    }
  }
})

describe("one agent state change per step", () => {
  it.effect("interrupt then generateReply while the agent thinks: it stays thinking, never listening for a moment", () =>
    Effect.gen(function*() {
      const main = Agent.make({ name: "main", instructions: "Main." })
      const session = yield* AgentSession.start({ agent: main })
      yield* session.generateReply({ instructions: "tell a long story" })
      yield* TestClock.adjust("1 second")
      const from = (yield* session.eventLog).length
      yield* session.interrupt
      yield* session.generateReply({ instructions: "summarise" })
      yield* TestClock.adjust("10 seconds")
      yield* session.idle
      const states = (yield* session.eventLog).slice(from).flatMap((e) => (e.type === "agent_state_changed" ? [e.state] : []))
      assert.deepStrictEqual(states, ["speaking", "listening"])
      const capture = yield* TextCapture.TextCapture
      assert.deepStrictEqual(order(capture), ["main: In short: a story."])
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, ScriptedModel.layer([
      { when: { instructions: "long story" }, reply: { text: "Once upon a time.", delay: "5 seconds" } },
      { when: { instructions: "summarise" }, reply: { text: "In short: a story.", delay: "1 second" } }
    ])))))
})
