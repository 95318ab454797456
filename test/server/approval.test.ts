/**
 * Tool approval over `/ws` on 127.0.0.1: the client (the operator) sees `tool_approval_requested`
 * and answers with `{"type":"approve"|"reject","callId"}`; an id that waits for nothing is an
 * input error and the session goes on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { connect, start, wait } from "./harness.ts"
import { desk, model, refunds } from "./refund-desk.ts"

describe("Server /ws tool approval", () => {
  it.live("approval: the operator approves a waiting call over /ws; a wrong id is an input error; a reject answers the next one", () =>
    Effect.gen(function*() {
      refunds.length = 0
      const server = yield* start(desk, model)
      const client = yield* connect(`${server.ws}/ws`)
      yield* wait(() => client.waitFor((f) => f.type === "ready", "ready"))
      client.sendJson({ type: "user_text", text: "refund please" })
      const requested = yield* wait(() => client.waitFor((f) => f.type === "tool_approval_requested", "tool_approval_requested"))
      assert.strictEqual(requested.tool, "refund")
      assert.deepStrictEqual(refunds, [])
      client.sendJson({ type: "approve", callId: "not-a-call" })
      const error = yield* wait(() => client.waitFor((f) => f.type === "error" && f.source === "input", "input error"))
      assert.include(error.message, requested.callId)
      client.sendJson({ type: "approve", callId: requested.callId })
      yield* wait(() => client.waitFor((f) => f.type === "agent_text" && f.delta.includes("refunded 20"), "the result"))
      assert.deepStrictEqual(refunds, [20])

      client.sendJson({ type: "user_text", text: "refund again" })
      const second = yield* wait(() => client.waitFor((f) => f.type === "tool_approval_requested" && f.callId !== requested.callId, "second request"))
      client.sendJson({ type: "reject", callId: second.callId, reason: "already refunded" })
      yield* wait(() => client.waitFor((f) => f.type === "agent_text" && f.delta.includes("already refunded"), "the rejection"))
      assert.deepStrictEqual(refunds, [20])
      const answered = client.frames.filter((f) => f.type === "tool_approval_answered").map((f) => [f.approved, f.by])
      assert.deepStrictEqual(answered, [[true, "app"], [false, "app"]])
    }).pipe(Effect.scoped))
})
