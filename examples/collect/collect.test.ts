import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ScriptedModel, TextCapture } from "@baton-voice/baton/testing"
import { AgentSession, CallTools } from "@baton-voice/baton"
import { desk } from "./agents.ts"
import { rules } from "./script.ts"

describe("example: ready-made tasks collect an email and a date of birth, then the call ends", () => {
  it.effect("collect email and collect date: each read back and confirmed, the typed results reach sign_up, then end call hangs up", () => {
    const hungUp: Array<string> = []
    return Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: desk })
      for (const turn of ["Please sign me up", "It's jane dot doe at example dot com", "yes", "The third of May 1990", "yes", "that's all"]) {
        yield* session.run(turn)
      }
      assert.deepStrictEqual(capture.writes.map((w) => `${w.agent}: ${w.text}`), [
        "collect_email: What is your email address?",
        "collect_email: I have jane.doe@example.com. Is that right?",
        "collect_date: And your date of birth?",
        "collect_date: I have May 3, 1990. Is that right?",
        "desk: Signed up jane.doe@example.com, born 1990-05-03. Anything else?",
        "desk: You're all set. Goodbye!"
      ])
      assert.deepStrictEqual(hungUp, ["the agent ended the call"])
    }).pipe(Effect.provide(Layer.mergeAll(
      TextCapture.layer,
      ScriptedModel.layer(rules),
      Layer.succeed(CallTools.CallControl, { transport: "test", hangUp: (reason) => Effect.sync(() => void hungUp.push(reason)), sendDtmf: () => Effect.void })
    )))
  })
})
