/**
 * An operator accepted a transfer whose task does not return (issue 35: a transport whose outcome
 * is late): the desk's take-over waits for the return, but not for ever. Cancelled from the desk
 * (`cancel_take_over`) or unreturned after 5 seconds, it is `NotApplied` saying why, the operator
 * does not hold the floor, and the agent keeps it: when the transfer returns, it speaks (rule 2).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import * as OperatorTransfer from "../../server/OperatorTransfer.ts"
import type * as Transfer from "../../src/Transfer.ts"
import { type Client, start, wait } from "./harness.ts"
import { agentText, front, frontModel, offeredToAda } from "./operatorDesk.ts"

const model = frontModel({ returned: "Front desk: the transfer came back.", otherwise: "Front desk here." })

/** The operator line, its outcome held until `late` opens (a transport whose callback is late). */
const serveWithLateDesk = Effect.gen(function*() {
  const late = yield* Deferred.make<void>()
  let line: OperatorTransfer.OperatorLine | undefined
  const transferer: Transfer.TransfererService = {
    transport: "operator",
    transfer: (request) =>
      Effect.suspend(() => OperatorTransfer.transferer(line!).transfer(request)).pipe(Effect.tap(() => Deferred.await(late)))
  }
  // The app's transferer (`ServeOptions.transferer`): what /ws calls transfer with.
  const server = yield* start(front, model, { maxLagMs: 0, agents: [front], transferer } as never)
  line = server.state.operators
  return { server, late }
})

/** A caller asks for a person and ada accepts the offer: the transfer task is still running. */
const accepted = Effect.gen(function*() {
  const { server, late } = yield* serveWithLateDesk
  const { ada, caller, offer } = yield* offeredToAda(server)
  ada.sendJson({ type: "accept", offer: offer.id })
  yield* wait(() => ada.waitFor((f) => f.type === "result" && f.of === "accept", "the accept"))
  yield* wait(() => ada.waitFor((f) => f.type === "history", "the session opened"))
  return { ada, caller, late }
})

/** The transfer returns: the agent holds the floor and tells the caller. */
const agentSpeaksOnReturn = (caller: Client, late: Deferred.Deferred<void>) =>
  Effect.gen(function*() {
    assert.notInclude(agentText(caller), "came back")
    yield* Deferred.succeed(late, undefined)
    yield* wait(() => caller.waitFor(() => agentText(caller).includes("Front desk: the transfer came back."), "the agent's reply"))
    assert.isFalse(caller.frames.some((f) => f.type === "agent_handoff" && f.kind === "take_over"), "nobody took over")
  })

describe("a take-over waiting for an accepted transfer (sockets)", () => {
  it.live("cancelled from the desk: NotApplied saying so, and the agent speaks when the transfer returns", () =>
    Effect.gen(function*() {
      const { ada, caller, late } = yield* accepted
      ada.sendJson({ type: "cancel_take_over" })
      const taken = yield* wait(() => ada.waitFor((f) => f.type === "result" && f.of === "take_over", "the cancel's result"))
      assert.deepStrictEqual(taken.outcome, { _tag: "NotApplied", reason: "ada cancelled the take-over" })
      // Nothing is waiting any more.
      ada.sendJson({ type: "cancel_take_over" })
      assert.include((yield* wait(() => ada.waitFor((f) => f.type === "error" && f.of === "cancel_take_over"))).message, "no take-over is waiting")
      yield* agentSpeaksOnReturn(caller, late)
      assert.strictEqual(ada.frames.filter((f) => f.type === "result" && f.of === "take_over").length, 1)
    }).pipe(Effect.scoped), 30_000)

  it.live("unreturned within 5 seconds: NotApplied at the desk (not an error), and the agent speaks when the transfer returns", () =>
    Effect.gen(function*() {
      const { ada, caller, late } = yield* accepted
      const taken = yield* wait(() => ada.waitFor((f) => f.type === "result" && f.of === "take_over", "the timed-out take-over", 10_000))
      assert.deepStrictEqual(taken.outcome, { _tag: "NotApplied", reason: "the task did not return within 5s" })
      yield* agentSpeaksOnReturn(caller, late)
    }).pipe(Effect.scoped), 30_000)
})
