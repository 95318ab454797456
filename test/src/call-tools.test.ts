/**
 * The call tools (issue 37): `endCall` says its goodbye, lets it play out, then asks the
 * transport to hang up; `sendDtmf` presses keys through the transport, and says clearly when the
 * digits are bad or the transport has no keypad. Here against a CallControl that records what it
 * was asked (the transports' own tests are in test/server).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { CallControl, noDtmf } from "../../services/CallControl.ts"
import { Agent, AgentSession, CallTools } from "../../src/index.ts"

const recording = (log: Array<string>, capture: () => TextCapture.TextCaptureService, withKeypad = true) =>
  Layer.succeed(CallControl, {
    transport: "test",
    hangUp: (reason) => Effect.sync(() => void log.push(`hang up (${reason}) after: ${capture().writes.map((w) => w.text).join(" | ")}`)),
    sendDtmf: withKeypad ? (digits) => Effect.sync(() => void log.push(`dtmf ${digits}`)) : noDtmf("test")
  })

describe("end call", () => {
  it.effect("end call: the goodbye is said to its end, then the transport hangs up, and the model is not asked again", () => {
    const log: Array<string> = []
    let capture: TextCapture.TextCaptureService | undefined
    const desk = Agent.make({ name: "desk", instructions: "Help.", tools: [CallTools.endCall({ goodbye: "Thanks for calling, goodbye!" })] })
    return Effect.gen(function*() {
      capture = yield* TextCapture.TextCapture
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: desk })
      const result = yield* session.run("that's all, bye")
      assert.deepStrictEqual(log, ["hang up (the agent ended the call) after: Thanks for calling, goodbye!"])
      result.expect.containsFunctionCallOutput({ output: "The call has ended." })
      assert.strictEqual(model.requestsFor("desk").length, 1)
    }).pipe(Effect.provide(Layer.mergeAll(
      TextCapture.layer,
      ScriptedModel.layer([{ when: { user: /bye/ }, reply: { toolCalls: [{ name: "end_call" }] } }]),
      recording(log, () => capture!)
    )))
  })
})

describe("DTMF out", () => {
  it.effect("DTMF out: the model's digits reach the transport and the model hears they were pressed", () => {
    const log: Array<string> = []
    const caller = Agent.make({ name: "caller", instructions: "Navigate the menu.", tools: [CallTools.sendDtmf()] })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: caller })
      const result = yield* session.run("For billing, press 2, then pound.")
      assert.deepStrictEqual(log, ["dtmf 2#"])
      result.expect.containsFunctionCallOutput({ output: "Pressed 2#." })
    }).pipe(Effect.provide(Layer.mergeAll(
      TextCapture.layer,
      ScriptedModel.layer([
        { when: { user: /press 2/ }, reply: { toolCalls: [{ name: "send_dtmf", arguments: { digits: "2#" } }] } },
        { when: { agent: "caller" }, reply: { text: "Done." } }
      ]),
      recording(log, () => undefined as never)
    )))
  })

  it.effect("DTMF out: digits a phone cannot send, or a transport without a keypad, give the model an error saying why; nothing is sent", () => {
    const log: Array<string> = []
    const caller = Agent.make({ name: "caller", instructions: "Navigate the menu.", tools: [CallTools.sendDtmf()] })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: caller })
      const bad = yield* session.run("press A")
      const output = bad.expect.containsFunctionCallOutput({ name: "send_dtmf" })
      assert.isTrue(output.isError)
      assert.include(output.output, "is not DTMF")
      const noKeypad = yield* session.run("press 1")
      const refused = noKeypad.expect.containsFunctionCallOutput({ name: "send_dtmf" })
      assert.isTrue(refused.isError)
      assert.include(refused.output, "test cannot send DTMF tones")
      assert.deepStrictEqual(log, [])
    }).pipe(Effect.provide(Layer.mergeAll(
      TextCapture.layer,
      ScriptedModel.layer([
        { when: { user: "press A" }, reply: { toolCalls: [{ name: "send_dtmf", arguments: { digits: "A" } }] } },
        { when: { user: "press 1" }, reply: { toolCalls: [{ name: "send_dtmf", arguments: { digits: "1" } }] } },
        { when: { agent: "caller" }, reply: { text: "Sorry." } }
      ]),
      recording(log, () => undefined as never, false)
    )))
  })
})
