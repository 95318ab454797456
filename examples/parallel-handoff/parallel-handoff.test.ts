import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "@baton-voice/baton/testing"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { AgentSession } from "@baton-voice/baton"
import { assertEveryCallAnswered } from "../../test/helpers.ts"
import { front, type Notes } from "./agents.ts"
import { rules } from "./script.ts"

describe("example: parallel note and transfer (seed 002 pair)", () => {
  it.effect("seed 002: the note is saved, billing takes over and sees it, front says nothing more", () =>
    Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start<Notes>({ agent: front, userdata: { saved: [] } })
      const result = yield* drive(session.run("I have a question about my bill"))
      result.expect.nextEvent().isMessage({ role: "user" })
      result.expect.nextEvent().isMessage({ role: "assistant", agent: "front" })
      result.expect.nextEvent().isFunctionCall({ name: "save_note" })
      result.expect.nextEvent().isFunctionCall({ name: "transfer_to_billing" })
      result.expect.nextEvent().isFunctionCallOutput({ name: "save_note", output: "Saved: caller disputes the March invoice" })
      result.expect.nextEvent().isFunctionCallOutput({ name: "transfer_to_billing", status: "handoff" })
      result.expect.nextEvent().isAgentHandoff({ from: "front", to: "billing" })
      result.expect.nextEvent().isMessage({ agent: "billing", content: "disputing the March invoice" })
      result.expect.noMoreEvents()
      assert.deepStrictEqual(session.userdata.saved, ["caller disputes the March invoice"])
      assert.strictEqual(model.requestsFor("front").length, 1)
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(ScriptedModel.layer(rules))))
})
