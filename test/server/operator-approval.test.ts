/**
 * Tool approval from the operator's desk on 127.0.0.1: a caller on `/ws` asks for a refund whose
 * tool needs approval; the operator, on `/operator/ws` with an operator token, sees the request
 * among the session's events and approves it (the tool runs, the caller hears the result), then
 * rejects the next one with a reason (the tool does not run, the model is told why). An id that
 * waits for nothing is an error frame to the operator, and the session goes on.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as Token from "../../server/Token.ts"
import { connect, start, wait } from "./harness.ts"
import { desk, model, refunds } from "./refund-desk.ts"

const SECRET = "operator-approval-secret"

describe("the operator's desk answers tool approvals", () => {
  it.live("approval: the operator approves a waiting call, rejects the next with a reason; a wrong id is an error frame", () =>
    Effect.gen(function*() {
      refunds.length = 0
      const server = yield* start(desk, model, { secret: SECRET, maxLagMs: 0 } as never)
      const secret = Redacted.make(SECRET)
      const caller = yield* connect(`${server.ws}/ws?token=${Token.mint(secret, 600, Date.now(), "ws").token}`)
      yield* wait(() => caller.waitFor((f) => f.type === "ready", "ready"))
      const operator = yield* connect(`${server.ws}/operator/ws?token=${Token.mint(secret, 600, Date.now(), "operator").token}`)
      operator.sendJson({ type: "list" })
      const listed = yield* wait(() => operator.waitFor((f) => f.type === "sessions" && f.sessions.length === 1, "the caller's session"))
      operator.sendJson({ type: "open", session: listed.sessions[0].id })
      yield* wait(() => operator.waitFor((f) => f.type === "history", "history"))

      caller.sendJson({ type: "user_text", text: "refund please" })
      const requested = yield* wait(() =>
        operator.waitFor((f) => f.type === "event" && f.event.type === "tool_approval_requested", "the approval request")
      )
      assert.strictEqual(requested.event.tool, "refund")
      assert.deepStrictEqual(refunds, [])
      operator.sendJson({ type: "approve", callId: "not-a-call" })
      const refused = yield* wait(() => operator.waitFor((f) => f.type === "error" && f.of === "approve", "an error for a wrong id"))
      assert.include(refused.message, requested.event.callId)
      operator.sendJson({ type: "approve", callId: requested.event.callId })
      yield* wait(() => caller.waitFor((f) => f.type === "agent_text" && f.delta.includes("refunded 20"), "the result"))
      assert.deepStrictEqual(refunds, [20])

      caller.sendJson({ type: "user_text", text: "refund again" })
      const second = yield* wait(() =>
        operator.waitFor(
          (f) => f.type === "event" && f.event.type === "tool_approval_requested" && f.event.callId !== requested.event.callId,
          "the second request"
        )
      )
      operator.sendJson({ type: "reject", callId: second.event.callId, reason: "already refunded" })
      yield* wait(() => caller.waitFor((f) => f.type === "agent_text" && f.delta.includes("already refunded"), "the rejection"))
      assert.deepStrictEqual(refunds, [20])
      yield* wait(() =>
        operator.waitFor((f) => f.type === "event" && f.event.type === "tool_approval_answered" && f.event.callId === second.event.callId, "the rejection's event")
      )
      const answered = operator.frames
        .filter((f) => f.type === "event" && f.event.type === "tool_approval_answered")
        .map((f) => f.event.approved)
      assert.deepStrictEqual(answered, [true, false])
    }).pipe(Effect.scoped))
})
