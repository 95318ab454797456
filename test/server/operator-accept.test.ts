/**
 * An operator accepting a transfer offer on `/operator` (issue 35) gets the caller at once: the
 * transfer's Answered outcome reaches the agent's tool (every call answered) but the agent's model
 * is not asked for a reply to it, so none of its words reach the caller; the operator holds the
 * floor, and a hand back gives it to the agent again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { wait } from "./harness.ts"
import { agentText, front, frontModel, offeredToAda, serveWithDesk } from "./operatorDesk.ts"

// The model would reply to the transfer's result: a reply that must never reach the caller.
const model = frontModel({ returned: "Front desk: you are through now, goodbye.", otherwise: "Front desk again, how can I help?" })

const settle = (ms: number) => wait(() => new Promise((r) => setTimeout(r, ms)))

describe("an accepted operator transfer (sockets)", () => {
  it.live("after Accept the agent says nothing: the tool gets Answered, the operator holds the floor, a hand back returns it", () =>
    Effect.gen(function*() {
      const { ada, caller, offer } = yield* offeredToAda(yield* serveWithDesk(front, model))
      ada.sendJson({ type: "accept", offer: offer.id })
      const taken = yield* wait(() => ada.waitFor((f) => f.type === "result" && f.of === "take_over", "the take-over"))
      assert.deepStrictEqual(taken.outcome, { _tag: "Applied", to: "ada" })
      const outputs = yield* wait(() => ada.waitFor((f) => f.type === "event" && f.event.type === "conversation_item_added" && f.event.item._tag === "FunctionCallOutput", "the tool's output"))
      assert.include(outputs.event.item.output, "The transfer was answered (ada accepted)")
      // Time for a reply to the tool's output to start, were the agent asked for one.
      yield* settle(500)
      assert.notInclude(agentText(caller), "Front desk", "no agent words after the transfer was answered")
      assert.isFalse(caller.frames.some((f) => f.type === "agent_audio" || (f.type === "agent_speech" && f.agent === "front")), "no agent speech")
      // The floor went from the transfer straight to ada: never back to the agent first.
      const moves = caller.frames.filter((f) => f.type === "agent_handoff").map((f) => `${f.kind}:${f.from}>${f.to}`)
      assert.deepStrictEqual(moves.slice(-2), ["return:cold_transfer>front", "take_over:front>ada"])
      ada.sendJson({ type: "say", text: "Hi, Ada here." })
      yield* wait(() => caller.waitFor(() => agentText(caller).includes("Ada here"), "ada's words"))
      // Hand back: the agent holds the floor again and replies.
      ada.sendJson({ type: "hand_back", agent: "front", note: "The caller is sorted." })
      yield* wait(() => caller.waitFor((f) => f.type === "agent_handoff" && f.kind === "hand_back" && f.to === "front", "the floor back"))
      caller.sendJson({ type: "user_text", text: "one more thing" })
      yield* wait(() => caller.waitFor(() => agentText(caller).includes("Front desk"), "the agent again"))
    }).pipe(Effect.scoped), 30_000)
})
