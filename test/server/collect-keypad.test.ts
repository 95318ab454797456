/**
 * Collect digits by keypad (issue 37) on a real phone line: a Twilio Media Streams client presses
 * keys, the bridge gathers them into `DTMF: ...` turns (src/voice/Dtmf.ts), and CollectDigits
 * records, reads back and, on "1" for yes, completes with them; the caller's tool gets the digits.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentTask, CollectDigits, Tool } from "../../src/index.ts"
import { type Client, connect, start, wait } from "./harness.ts"

const pin = CollectDigits.make({ what: "PIN", length: 4 })
const outputs: Array<string> = []
const ivr = Agent.make({
  name: "ivr",
  instructions: "Verify the caller's PIN.",
  tools: [Tool.make("verify", { description: "verify", handler: () => Effect.map(AgentTask.run(pin), (digits) => `PIN ${digits}`) })]
})
const text = (r: ScriptedModel.RecordedRequest) =>
  r.last.kind === "user" ? r.last.text : r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join(" ") : ""
const model = ScriptedModel.layer([
  {
    when: (r) => {
      if (r.last.kind === "tool" && r.agent === "ivr") outputs.push(text(r))
      return false
    },
    reply: {}
  },
  { when: { user: "DTMF: 0", agent: "ivr" }, reply: { toolCalls: [{ name: "verify" }] } },
  { when: { user: "DTMF: 1", agent: "collect_digits" }, reply: { toolCalls: [{ name: "confirm_digits", arguments: { digits: "4711" } }] } },
  { when: { user: /^DTMF: \d{2,}/, agent: "collect_digits" }, reply: (r) => ({ toolCalls: [{ name: "record_digits", arguments: { digits: text(r) } }] }) },
  { when: { toolOutput: "Read it back", agent: "collect_digits" }, reply: { text: "I have 4 7 1 1. Press 1 if that is right." } },
  { when: { agent: "collect_digits" }, reply: { text: "Type your PIN, then pound." } },
  { when: { agent: "ivr" }, reply: { text: "Verified." } }
])

const press = (caller: Client, digits: string) => {
  for (const [i, digit] of [...digits].entries()) caller.sendJson({ event: "dtmf", streamSid: "MZ1", sequenceNumber: String(i + 2), dtmf: { track: "inbound_track", digit } })
}
const marks = (caller: Client) => caller.frames.filter((f) => f.event === "mark").length
const untilMarks = (caller: Client, n: number) =>
  wait(async () => {
    for (let i = 0; i < 2000 && marks(caller) < n; i++) await new Promise((r) => setTimeout(r, 10))
    if (marks(caller) < n) throw new Error(`only ${marks(caller)} marks`)
  })

describe("collect digits", () => {
  it.live("collect digits: keypad presses on /twilio are recorded, read back and confirmed with 1; the caller's tool gets them", () =>
    Effect.gen(function*() {
      const server = yield* start(ivr, model)
      const caller = yield* connect(`${server.ws}/twilio`)
      caller.sendJson({ event: "connected", protocol: "Call", version: "1.0.0" })
      caller.sendJson({ event: "start", sequenceNumber: "1", streamSid: "MZ1", start: { callSid: "CA00000000000000000000000000000009", customParameters: {} } })
      press(caller, "0#")
      yield* untilMarks(caller, 1) // "Type your PIN"
      press(caller, "4711#")
      yield* untilMarks(caller, 2) // the read-back
      press(caller, "1#")
      yield* untilMarks(caller, 3) // the ivr's answer
      assert.deepStrictEqual(outputs, ["PIN 4711"])
    }).pipe(Effect.scoped), 30_000)
})
