/**
 * Guardrails (issue 37): output guardrails check a reply's text as it streams (on sentence ends,
 * otherwise debounced) and a trip cuts the speech as a barge-in does (what was heard stays,
 * nothing after); tool input and output guardrails block a call or its result; each trip emits
 * `guardrail_tripped` and runs its policy (say, handoff, end the call). Under TestClock with the
 * scripted model.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { drive } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { CallControl } from "../../services/CallControl.ts"
import { Agent, AgentSession, Guardrail, type SessionEvent, Tool } from "../../src/index.ts"
import { assertEveryCallAnswered } from "../helpers.ts"

const model = ScriptedModel.layer([
  { when: { user: "price" }, reply: { text: ["Our price ", "is $40. ", "Thanks ", "for calling."], chunkDelay: "100 millis" } },
  { when: { user: "ramble" }, reply: { text: ["one ", "two ", "three ", "secret ", "five ", "six ", "seven ", "eight ", "nine"], chunkDelay: "100 millis" } },
  { when: { user: "fine" }, reply: { text: ["All ", "good ", "here. ", "Bye."], chunkDelay: "100 millis" } },
  { when: { user: "delete" }, reply: { toolCalls: [{ name: "delete_account", arguments: { id: "root" } }] } },
  { when: { user: "lookup" }, reply: { toolCalls: [{ name: "lookup", arguments: { id: "42" } }] } },
  { when: { toolOutput: /./ }, reply: (r) => ({ text: `Tool said: ${r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join("") : ""}` }) },
  { when: { user: /./ }, reply: { text: "Hello." } }
])

const noPrices = (checks: Array<string>, policy: Guardrail.Policy = Guardrail.say("I can't quote prices.")) =>
  Guardrail.output("no_prices", {
    check: (text) => Effect.sync(() => void checks.push(text)).pipe(Effect.as(/\$\d/.test(text) ? "quoted a price" : undefined)),
    policy
  })

const ofType = <T extends SessionEvent["type"]>(events: ReadonlyArray<SessionEvent>, type: T) =>
  events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type)

const assistantTexts = (session: AgentSession.AgentSession) =>
  Effect.map(session.history, (h) => h.items.flatMap((i) => (i._tag === "Message" && i.role === "assistant" ? [{ text: i.text, interrupted: i.interrupted ?? false }] : [])))

describe("guardrails", () => {
  it.effect("guardrail: an output guardrail trips on a sentence end: the speech is cut there, nothing after it is said, and the policy's line follows", () =>
    Effect.gen(function*() {
      const checks: Array<string> = []
      const agent = Agent.make({ name: "sales", instructions: "S", guardrails: [noPrices(checks)] })
      const session = yield* AgentSession.start({ agent })
      const result = yield* drive(session.run("price"))
      const capture = yield* TextCapture.TextCapture
      // What was heard stays; "Thanks for calling." is never said; the line comes after.
      assert.strictEqual(capture.textOf("sales"), "Our price is $40. I can't quote prices.")
      assert.deepStrictEqual(yield* assistantTexts(session), [
        { text: "Our price is $40. ", interrupted: true },
        { text: "I can't quote prices.", interrupted: false }
      ])
      const tripped = ofType(result.sessionEvents, "guardrail_tripped")
      assert.deepStrictEqual(tripped.map((e) => [e.agent, e.guardrail, e.kind, e.policy, e.message]), [["sales", "no_prices", "output", "say", "quoted a price"]])
      // Checked on the sentence end, not before it (the first chunk ends no sentence and the
      // second came within the debounce).
      assert.deepStrictEqual(checks, ["Our price is $40. "])
    }).pipe(Effect.provide(Layer.merge(model, TextCapture.layer))))

  it.effect("guardrail: text without sentence ends is checked debounced (every 250 ms), not on each chunk, and cut soon after the bad word", () =>
    Effect.gen(function*() {
      const checks: Array<string> = []
      const noSecrets = Guardrail.output("no_secrets", {
        check: (text) => Effect.sync(() => void checks.push(text)).pipe(Effect.as(text.includes("secret") ? "said the secret" : undefined)),
        policy: Guardrail.say("Let me start over.")
      })
      // Session-level: every agent's speech is checked.
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A" }), guardrails: [noSecrets] })
      yield* drive(session.run("ramble"))
      const capture = yield* TextCapture.TextCapture
      const said = capture.textOf("a")
      assert.isTrue(said.startsWith("one two three secret "), said)
      assert.notInclude(said, "nine")
      assert.isTrue(said.endsWith("Let me start over."))
      // Nine chunks 100 ms apart: a check each 250 ms of new text, so fewer checks than chunks.
      assert.isAtLeast(checks.length, 1)
      assert.isBelow(checks.length, 4, JSON.stringify(checks))
      // The cut came within one debounce of the bad word: at most two more chunks were said.
      const after = said.slice("one two three secret ".length, said.length - "Let me start over.".length)
      assert.isAtMost(after.split(" ").filter((w) => w !== "").length, 2, after)
    }).pipe(Effect.provide(Layer.merge(model, TextCapture.layer))))

  it.effect("guardrail: text that passes is said whole, and checked once more as the speech ends", () =>
    Effect.gen(function*() {
      const checks: Array<string> = []
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A", guardrails: [noPrices(checks)] }) })
      const result = yield* drive(session.run("fine"))
      assert.strictEqual((yield* TextCapture.TextCapture).textOf("a"), "All good here. Bye.")
      assert.strictEqual(ofType(result.sessionEvents, "guardrail_tripped").length, 0)
      assert.strictEqual(checks[checks.length - 1], "All good here. Bye.")
    }).pipe(Effect.provide(Layer.merge(model, TextCapture.layer))))

  it.effect("guardrail: the handoff policy passes the floor to the agent it names", () =>
    Effect.gen(function*() {
      const supervisor = Agent.make({ name: "supervisor", instructions: "Sup" })
      const agent = Agent.make({ name: "sales", instructions: "S", guardrails: [noPrices([], Guardrail.handoff(() => supervisor))] })
      const session = yield* AgentSession.start({ agent })
      const result = yield* drive(session.run("price"))
      assert.strictEqual((yield* session.currentAgent)?.name, "supervisor")
      const handoff = ofType(result.sessionEvents, "agent_handoff").find((e) => e.to === "supervisor")
      assert.isDefined(handoff)
      assert.notInclude((yield* TextCapture.TextCapture).textOf("sales"), "Thanks")
    }).pipe(Effect.provide(Layer.merge(model, TextCapture.layer))))

  it.effect("guardrail: endCall closes a session that has no CallControl", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A", guardrails: [noPrices([], Guardrail.endCall())] }) })
      yield* session.send("price")
      yield* drive(session.awaitClosed)
      assert.isTrue(yield* session.closed)
      assert.notInclude((yield* TextCapture.TextCapture).textOf("a"), "Thanks")
    }).pipe(Effect.provide(Layer.merge(model, TextCapture.layer))))

  it.effect("guardrail: endCall hangs up through the session's CallControl when it has one", () =>
    Effect.gen(function*() {
      const hangUps: Array<string> = []
      const control = Layer.succeed(CallControl, {
        transport: "test",
        hangUp: (reason) => Effect.sync(() => void hangUps.push(reason)),
        sendDtmf: () => Effect.void
      })
      const session = yield* AgentSession.start({
        agent: Agent.make({ name: "a", instructions: "A", guardrails: [noPrices([], Guardrail.endCall("price quoted"))] })
      }).pipe(Effect.provide(control))
      yield* drive(session.run("price"))
      assert.deepStrictEqual(hangUps, ["price quoted"])
    }).pipe(Effect.provide(Layer.merge(model, TextCapture.layer))))

  it.effect("guardrail: a tool input guardrail blocks the call before its handler; the model reads why; the policy runs", () =>
    Effect.gen(function*() {
      const deleted: Array<string> = []
      const deleteAccount = Tool.make("delete_account", {
        description: "Deletes an account",
        parameters: Schema.Struct({ id: Schema.String }),
        handler: ({ id }) => Effect.sync(() => void deleted.push(id)).pipe(Effect.as("deleted"))
      })
      const noRoot = Guardrail.toolInput("no_root", {
        check: (call) => Effect.succeed((call.arguments as { id?: string }).id === "root" ? "the root account" : undefined),
        policy: Guardrail.say("That account cannot be deleted.")
      })
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A", tools: [deleteAccount], guardrails: [noRoot] }) })
      const result = yield* drive(session.run("delete"))
      assert.deepStrictEqual(deleted, [])
      const output = result.expect.containsFunctionCallOutput({ name: "delete_account", isError: true })
      assert.strictEqual(output.output, "delete_account was blocked by the no_root guardrail: the root account.")
      const tripped = ofType(result.sessionEvents, "guardrail_tripped")
      assert.deepStrictEqual(tripped.map((e) => [e.kind, e.callId !== undefined]), [["tool_input", true]])
      assert.include((yield* TextCapture.TextCapture).textOf("a"), "That account cannot be deleted.")
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(Layer.merge(model, TextCapture.layer))))

  it.effect("guardrail: a tool output guardrail replaces a result the model must not read with an error output", () =>
    Effect.gen(function*() {
      const lookup = Tool.make("lookup", {
        description: "Looks a customer up",
        parameters: Schema.Struct({ id: Schema.String }),
        handler: () => Effect.succeed({ name: "Ann", ssn: "123-45-6789" })
      })
      const noSsn = Guardrail.toolOutput("no_ssn", {
        check: (call) => Effect.succeed(JSON.stringify(call.output).includes("ssn") ? "a social security number" : undefined),
        policy: Guardrail.say("I can't share that.")
      })
      const session = yield* AgentSession.start({ agent: Agent.make({ name: "a", instructions: "A", tools: [lookup], guardrails: [noSsn] }) })
      const result = yield* drive(session.run("lookup"))
      const output = result.expect.containsFunctionCallOutput({ name: "lookup", isError: true })
      assert.strictEqual(output.output, "lookup was blocked by the no_ssn guardrail: a social security number.")
      const history = yield* session.history
      assert.isFalse(history.items.some((i) => i._tag === "FunctionCallOutput" && i.output.includes("123-45")))
      assert.deepStrictEqual(ofType(result.sessionEvents, "guardrail_tripped").map((e) => e.kind), ["tool_output"])
      assertEveryCallAnswered(history)
    }).pipe(Effect.provide(Layer.merge(model, TextCapture.layer))))
})
