import { assert, describe, it } from "@effect/vitest"
import { renderEvent } from "../../../layers/console/Render.ts"
import * as Style from "../../../layers/console/Style.ts"
import { functionCall, functionCallOutput, message } from "../../../src/ChatContext.ts"
import type { SessionEvent } from "../../../src/index.ts"

type Input = SessionEvent extends infer E ? E extends SessionEvent ? Omit<E, "seq" | "at"> : never : never
const at = (event: Input): SessionEvent => ({ ...event, seq: 0, at: 0 }) as SessionEvent
const plain = (event: Input) => renderEvent(at(event), Style.plain)

describe("console rendering", () => {
  it("floor changes: start, handoff with reason, resumed, task, return", () => {
    assert.deepStrictEqual(plain({ type: "agent_handoff", from: undefined, to: "greeter", kind: "start", resumed: false }), [
      "── floor: greeter [start]"
    ])
    assert.deepStrictEqual(
      plain({ type: "agent_handoff", from: "greeter", to: "weather", kind: "handoff", resumed: true, reason: "weather in Paris" }),
      ["── floor: greeter → weather [handoff, resumed] reason: weather in Paris"]
    )
    assert.deepStrictEqual(plain({ type: "agent_handoff", from: "greeter", to: "booking", kind: "task", resumed: false }), [
      "── floor: greeter → booking [task]"
    ])
    assert.deepStrictEqual(plain({ type: "agent_handoff", from: "booking", to: "greeter", kind: "return", resumed: true }), [
      "── floor: booking → greeter [return]"
    ])
  })

  it("tool calls with their arguments, and their outputs by status", () => {
    const call = functionCall({ callId: "c1", name: "save_note", arguments: "{\"text\":\"hi\"}", agent: "greeter" })
    assert.deepStrictEqual(plain({ type: "conversation_item_added", agent: "greeter", item: call }), [
      "  [greeter] ⚙ save_note({\"text\":\"hi\"})"
    ])
    const noArgs = functionCall({ callId: "c2", name: "book", arguments: "{}", agent: "greeter" })
    assert.deepStrictEqual(plain({ type: "conversation_item_added", agent: "greeter", item: noArgs }), ["  [greeter] ⚙ book()"])
    const output = (status: "ok" | "error" | "handoff" | "cancelled", isError: boolean, text: string) =>
      plain({
        type: "conversation_item_added",
        agent: "greeter",
        item: functionCallOutput({ callId: "c1", name: "save_note", output: text, isError, status, agent: "greeter" })
      })
    assert.deepStrictEqual(output("ok", false, "Saved"), ["  [greeter] ⚙ save_note → Saved"])
    assert.deepStrictEqual(output("error", true, "bad\nthing"), ["  [greeter] ⚙ save_note ✗ error: bad thing"])
    assert.deepStrictEqual(output("handoff", false, "Transferred."), ["  [greeter] ⚙ save_note ⇒ handoff: Transferred."])
    assert.deepStrictEqual(output("cancelled", true, "Cancelled"), ["  [greeter] ⚙ save_note ✗ cancelled: Cancelled"])
    const long = output("ok", false, "x".repeat(1000))[0]!
    assert.isBelow(long.length, 400)
    assert.isTrue(long.endsWith("…"))
  })

  it("errors show their source, agent and first line only; handoffs not applied; the end", () => {
    assert.deepStrictEqual(
      plain({ type: "error", agent: "weather", source: "model", message: "\nAiError: rate limited\n    at x (y.ts:1)", recoverable: true }),
      ["! error (model, weather): AiError: rate limited"]
    )
    assert.deepStrictEqual(plain({ type: "error", agent: undefined, source: "input", message: "boom", recoverable: false }), [
      "! error (input): boom [the session cannot go on]"
    ])
    assert.deepStrictEqual(plain({ type: "handoff_not_applied", agent: "greeter", to: "booking", reason: "booking is a task" }), [
      "! handoff greeter → booking not applied: booking is a task"
    ])
    assert.deepStrictEqual(plain({ type: "close", reason: "closed" }), ["── session closed"])
  })

  it("messages and bookkeeping events are not rendered (agent text streams through TextOutput)", () => {
    assert.deepStrictEqual(plain({ type: "conversation_item_added", agent: "greeter", item: message("assistant", "hi", { agent: "greeter" }) }), [])
    assert.deepStrictEqual(plain({ type: "agent_state_changed", agent: "greeter", state: "thinking", previous: "listening" }), [])
    assert.deepStrictEqual(plain({ type: "speech_created", agent: "greeter", speechId: "s", source: "say" }), [])
  })

  it("escape sequences from a model or tool never reach the terminal", () => {
    const call = functionCall({ callId: "c1", name: "t", arguments: "{\"a\":\"\u001b[2J\u0007x\"}", agent: "a\u001b[31m" })
    const [line] = plain({ type: "conversation_item_added", agent: "a", item: call })
    assert.notInclude(line!, "\u001b")
    assert.notInclude(line!, "\u0007")
  })

  it("with colours: tool lines dim, errors red, agents coloured", () => {
    const style = Style.make(true)
    const call = functionCall({ callId: "c1", name: "t", arguments: "{}", agent: "greeter" })
    const [line] = renderEvent(at({ type: "conversation_item_added", agent: "greeter", item: call }), style)
    assert.include(line!, "\u001b[2m⚙ t()\u001b[22m")
    const [error] = renderEvent(at({ type: "error", agent: undefined, source: "tool", message: "x", recoverable: true }), style)
    assert.isTrue(error!.startsWith("\u001b[31m"))
    assert.isTrue(Style.shouldColor(true, undefined))
    assert.isTrue(Style.shouldColor(true, ""))
    assert.isFalse(Style.shouldColor(true, "1"))
    assert.isFalse(Style.shouldColor(false, undefined))
  })
})
