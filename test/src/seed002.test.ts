/**
 * Seed 002: parallel tool calls where one hands off. In the peers a sibling's output cancels the
 * handoff, or the outgoing agent replies to it. Here, in every variant: the handoff happens
 * after all calls settled, the new agent's onEnter runs once, the outgoing agent makes no model
 * call after the batch, and every call has one output, in call order.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Schema } from "effect"
import { drive } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, Handoff, Tool } from "../../src/index.ts"
import { assertEveryCallAnswered, callNames, eventsOfAgentAfter, handoffSeq, outputNames } from "../helpers.ts"

interface Fixture {
  readonly greeter: Agent.Agent
  readonly counts: { bEnter: number; cEnter: number; aExit: number }
}

type Delays = { note?: Duration.Input; transfer?: Duration.Input }

const fixture = (delays: Delays = {}): Fixture => {
  const counts = { bEnter: 0, cEnter: 0, aExit: 0 }
  const sleep = (d: Duration.Input | undefined) => (d ? Effect.sleep(d) : Effect.void)
  const b: Agent.Agent = Agent.make({
    name: "billing",
    instructions: "You are billing.",
    onEnter: Effect.sync(() => void counts.bEnter++).pipe(Effect.andThen(Agent.reply({ instructions: "greet as billing" })))
  })
  const c: Agent.Agent = Agent.make({
    name: "support",
    instructions: "You are support.",
    onEnter: Effect.sync(() => void counts.cEnter++).pipe(Effect.andThen(Agent.reply({ instructions: "greet as support" })))
  })
  const greeter: Agent.Agent = Agent.make({
    name: "greeter",
    instructions: "You are the greeter.",
    onExit: Effect.sync(() => void counts.aExit++),
    tools: [
      Tool.make("save_note", {
        description: "Save a note",
        parameters: Schema.Struct({ text: Schema.String }),
        handler: ({ text }) => sleep(delays.note).pipe(Effect.as(`saved: ${text}`))
      }),
      Tool.make("lookup_account", {
        description: "Look up the account",
        handler: () => Effect.succeed({ account: "A-1", balance: 12 })
      }),
      Tool.make("transfer_to_billing", {
        description: "Transfer to billing",
        handler: () => sleep(delays.transfer).pipe(Effect.as(Handoff.to(() => b)))
      }),
      Tool.make("transfer_bare", {
        description: "Transfer to billing (returns the agent itself)",
        handler: () => Effect.succeed(b)
      }),
      Tool.make("transfer_with_message", {
        description: "Transfer to billing with a message",
        handler: () => Effect.succeed(Handoff.to(b, { message: "Billing will take it from here." }))
      }),
      Tool.handoff("transfer_to_support", () => c)
    ]
  })
  return { greeter, counts }
}

const script = (calls: ReadonlyArray<ScriptedModel.ScriptedToolCall>): ReadonlyArray<ScriptedModel.Rule> => [
  { when: { user: "help" }, reply: { text: "Sure.", toolCalls: calls } },
  { when: { instructions: "greet as billing" }, reply: { text: "Billing here." } },
  { when: { instructions: "greet as support" }, reply: { text: "Support here." } },
  // Any reply the greeter would make after the batch (it must never be asked).
  { when: { agent: "greeter" }, reply: { text: "greeter keeps talking" } }
]

const note = { name: "save_note", arguments: { text: "call back" } }

const runVariant = (
  name: string,
  options: {
    readonly calls: ReadonlyArray<ScriptedModel.ScriptedToolCall>
    readonly delays?: Delays
    readonly expectedTo?: string
    readonly check?: (ctx: { history: AgentSession.AgentSession["history"] extends Effect.Effect<infer H> ? H : never }) => void
  }
) =>
  it.effect(name, () => {
    const { greeter, counts } = fixture(options.delays)
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: greeter })
      const result = yield* drive(session.run("help me with my bill"))
      const to = options.expectedTo ?? "billing"
      result.expect.containsAgentHandoff({ from: "greeter", to })
      const history = yield* session.history
      const events = yield* session.eventLog

      // The new agent's onEnter ran exactly once; the outgoing agent's onExit once.
      assert.strictEqual(to === "billing" ? counts.bEnter : counts.cEnter, 1)
      assert.strictEqual(counts.aExit, 1)
      // Zero model calls for the outgoing agent after the batch: only the one that made it.
      assert.strictEqual(model.requestsFor("greeter").length, 1)
      // Nothing from the outgoing agent after the handoff: no speech, no item, no text.
      assert.deepStrictEqual(eventsOfAgentAfter(events, "greeter", handoffSeq(events, to)), [])
      assert.strictEqual(text.textOf("greeter"), "Sure.")
      assert.notInclude(JSON.stringify(history.items), "greeter keeps talking")
      // Every call has one output, and outputs are in call order.
      assertEveryCallAnswered(history)
      assert.deepStrictEqual(outputNames(history), callNames(history))
      // The batch is reported once, with the handoff flag.
      const executed = events.filter((e) => e.type === "function_tools_executed")
      assert.strictEqual(executed.length, 1)
      assert.isTrue(executed[0]!.type === "function_tools_executed" && executed[0]!.hasHandoff)
      assert.strictEqual((yield* session.currentAgent)?.name, to)
      options.check?.({ history })
    }).pipe(Effect.provide([ScriptedModel.layer(script(options.calls)), TextCapture.layer]))
  })

describe("seed 002: parallel tool calls where one hands off", () => {
  runVariant("seed 002: both tools immediate", {
    calls: [note, { name: "transfer_to_billing" }],
    check: ({ history }) => {
      const saved = history.items.find((i) => i._tag === "FunctionCallOutput" && i.name === "save_note")
      assert.include(saved && saved._tag === "FunctionCallOutput" ? saved.output : "", "saved: call back")
    }
  })
  runVariant("seed 002: sibling finishes after the handoff", {
    calls: [note, { name: "transfer_to_billing" }],
    delays: { note: "2 seconds" }
  })
  runVariant("seed 002: handoff finishes after the sibling", {
    calls: [note, { name: "transfer_to_billing" }],
    delays: { transfer: "2 seconds" }
  })
  runVariant("seed 002: an agent value returned directly is a handoff, not a string", {
    calls: [note, { name: "transfer_bare" }],
    check: ({ history }) => {
      const output = history.items.find((i) => i._tag === "FunctionCallOutput" && i.name === "transfer_bare")
      assert.isTrue(output?._tag === "FunctionCallOutput" && output.status === "handoff")
      assert.notInclude(output?._tag === "FunctionCallOutput" ? output.output : "", "instructions")
    }
  })
  runVariant("seed 002: a handoff with a message", {
    calls: [note, { name: "transfer_with_message" }],
    check: ({ history }) => {
      const output = history.items.find((i) => i._tag === "FunctionCallOutput" && i.name === "transfer_with_message")
      assert.strictEqual(output?._tag === "FunctionCallOutput" ? output.output : "", "Billing will take it from here.")
    }
  })
  runVariant("seed 002: three parallel tools", {
    calls: [note, { name: "lookup_account" }, { name: "transfer_to_billing" }],
    delays: { note: "1 second" }
  })
  runVariant("seed 002: two handoffs in one batch: the first in call order wins", {
    calls: [note, { name: "transfer_to_billing" }, { name: "transfer_to_support" }],
    delays: { transfer: "1 second" },
    check: ({ history }) => {
      const second = history.items.find((i) => i._tag === "FunctionCallOutput" && i.name === "transfer_to_support")
      assert.isTrue(second?._tag === "FunctionCallOutput" && second.isError)
      assert.include(second?._tag === "FunctionCallOutput" ? second.output : "", "only the first transfer")
      assert.isFalse(history.items.some((i) => i._tag === "AgentHandoff" && i.to === "support"))
    }
  })

  it.effect("seed 002: the new agent sees the sibling's output (context policy full)", () => {
    const { greeter } = fixture()
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: greeter })
      yield* session.run("help me")
      const billing = model.requestsFor("billing")
      assert.strictEqual(billing.length, 1)
      const sent = JSON.stringify(billing[0]!.prompt.content)
      assert.include(sent, "saved: call back")
      assert.include(sent, "You are billing.")
      assert.notInclude(sent, "You are the greeter.")
    }).pipe(Effect.provide(ScriptedModel.layer(script([note, { name: "transfer_to_billing" }]))))
  })
})
