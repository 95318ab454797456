/**
 * The agent presses keys and hangs up in a LiveKit room (issue 37), through rtc-node's loopback
 * room: `sendDtmf` publishes each tone on the local participant (a SIP caller's line hears it),
 * `endCall` says its goodbye into the room, then the job's session closes and the job ends.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as Job from "../../layers/livekit/Job.ts"
import * as LoopbackRoom from "../../layers/livekit/LoopbackRoom.ts"
import { RtcNode } from "../../layers/rtc/RtcNode.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, CallTools } from "../../src/index.ts"
import { until } from "../helpers.ts"

const desk = Agent.make({
  name: "desk",
  instructions: "Navigate menus; end the call when asked.",
  tools: [CallTools.sendDtmf(), CallTools.endCall({ goodbye: "Goodbye from the room." })]
})
const model = ScriptedModel.layer([
  { when: { user: /press/ }, reply: { toolCalls: [{ name: "send_dtmf", arguments: { digits: "2w#" } }] } },
  { when: { user: /bye/ }, reply: { toolCalls: [{ name: "end_call" }] } },
  { when: { agent: "desk" }, reply: { text: "Pressed." } }
])

describe("LiveKit call control (rtc-node loopback)", () => {
  it.live("DTMF out: the tones are published into the room in order (w waits); end call: the goodbye, then the job ends", () =>
    Effect.gen(function*() {
      const room = yield* LoopbackRoom.make()
      const job = yield* Job.run({ id: "J_1", roomName: "loopback", url: "ws://unused", token: Redacted.make("unused") }, { agent: desk }).pipe(
        Effect.provide(room.layer),
        Effect.scoped,
        Effect.forkScoped
      )
      yield* room.chat("press two then pound")
      yield* until("the reply after the tones", () => room.texts.some((t) => t.text === "Pressed."))
      assert.deepStrictEqual(room.tones, ["2", "#"])
      yield* room.chat("bye")
      yield* until("the job ended", () => job.pollUnsafe() !== undefined)
      assert.isTrue(room.texts.some((t) => t.text === "Goodbye from the room."), JSON.stringify(room.texts))
    }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(model, RtcNode.layer))), 30_000)
})
