/**
 * The handoff rules alone (src/internal/HandoffRules.ts): which transfers are refused, in which
 * order the reasons apply, and the one wording of each (rule 3's first-transfer-wins, and the
 * floor's who-may-hand-off-to-whom), with plain values for agents and actors.
 */
import { assert, describe, it } from "@effect/vitest"
import * as HandoffRules from "../../../src/internal/HandoffRules.ts"

const agentA = { name: "a" }
const agentB = { name: "b" }
const taskT = { name: "t", task: { context: "full" } }
const a = { name: "a", agent: agentA, task: undefined }
const b = { name: "b", agent: agentB, task: undefined }
const runningTask = { name: "t", agent: taskT, task: { caller: a } }

const tag = (transfer: HandoffRules.Transfer) => HandoffRules.refusal(transfer)?._tag

describe("handoff rules", () => {
  it("the holder may hand off to another agent", () => {
    assert.isUndefined(HandoffRules.refusal({ from: a, holder: a, target: agentB }))
    // The application forcing it asks the holder.
    assert.isUndefined(HandoffRules.refusal({ from: undefined, holder: a, target: agentB }))
  })

  it("with no holder, nothing can be transferred", () => {
    assert.deepStrictEqual(HandoffRules.refusal({ from: undefined, holder: undefined, target: agentB }), { _tag: "NoHolder" })
  })

  it("an agent that no longer holds the floor cannot hand it off, named or not who does", () => {
    const named = HandoffRules.refusal({ from: a, holder: b, target: agentB })
    assert.deepStrictEqual(named, { _tag: "NotHolder", agent: "a", holder: "b" })
    assert.strictEqual(HandoffRules.reason(named!), "a no longer holds the floor (b does)")
    const unnamed = HandoffRules.refusal({ from: a, holder: "other", target: agentB })
    assert.strictEqual(HandoffRules.reason(unnamed!), "a no longer holds the floor")
  })

  it("a task cannot hand off: only its completion returns the floor", () => {
    const refused = HandoffRules.refusal({ from: runningTask, holder: runningTask, target: agentB })
    assert.deepStrictEqual(refused, { _tag: "FromTask", agent: "t" })
    // Forced by the application, the holder being a task: the same refusal.
    assert.strictEqual(tag({ from: undefined, holder: runningTask, target: agentB }), "FromTask")
  })

  it("a task agent is started with AgentTask.run, not transferred to", () => {
    const refused = HandoffRules.refusal({ from: a, holder: a, target: taskT })
    assert.deepStrictEqual(refused, { _tag: "TargetIsTask", target: "t" })
    assert.strictEqual(HandoffRules.output("t", refused!), "Not transferred to t: t is a task: start it with AgentTask.run, not a transfer.")
  })

  it("the floor is not transferred to the agent that holds it", () => {
    assert.deepStrictEqual(HandoffRules.refusal({ from: a, holder: a, target: agentA }), { _tag: "TargetHoldsFloor", target: "a" })
    // Another agent of the same name is another agent.
    assert.isUndefined(HandoffRules.refusal({ from: a, holder: a, target: { name: "a" } }))
  })

  it("only the first transfer of a response applies (rule 3)", () => {
    const refused = HandoffRules.refusal({ from: a, holder: a, target: agentB, earlier: "c" })
    assert.deepStrictEqual(refused, { _tag: "NotFirst", first: "c" })
    assert.strictEqual(HandoffRules.output("b", refused!), "Not transferred to b: only the first transfer of a response is applied (to c).")
  })

  it("a batch said over one that passes the floor, or cut by the close, transfers nothing", () => {
    assert.deepStrictEqual(HandoffRules.refusal({ from: a, holder: a, target: agentB, passing: true }), { _tag: "AlreadyPassing", agent: "a" })
    assert.strictEqual(HandoffRules.reason({ _tag: "AlreadyPassing", agent: "a" }), "a is already passing the floor")
    assert.strictEqual(tag({ from: a, holder: a, target: agentB, closing: true }), "SessionClosing")
  })

  it("reasons apply in order: closing, passing, no holder, not the holder, a task, the target", () => {
    // Every reason at once: the close decides.
    const all = { from: runningTask, holder: b, target: taskT, earlier: "c", passing: true, closing: true }
    assert.strictEqual(tag(all), "SessionClosing")
    assert.strictEqual(tag({ ...all, closing: false }), "AlreadyPassing")
    assert.strictEqual(tag({ ...all, closing: false, passing: false, holder: undefined }), "NoHolder")
    assert.strictEqual(tag({ ...all, closing: false, passing: false }), "NotHolder")
    assert.strictEqual(tag({ ...all, closing: false, passing: false, holder: runningTask }), "FromTask")
    assert.strictEqual(tag({ ...all, closing: false, passing: false, from: a, holder: a }), "TargetIsTask")
    assert.strictEqual(tag({ ...all, closing: false, passing: false, from: a, holder: a, target: agentA }), "TargetHoldsFloor")
    assert.strictEqual(tag({ ...all, closing: false, passing: false, from: a, holder: a, target: agentB }), "NotFirst")
  })

  it("every refusal has a wording of its own", () => {
    const all: ReadonlyArray<HandoffRules.Refusal> = [
      { _tag: "SessionClosing" },
      { _tag: "AlreadyPassing", agent: "a" },
      { _tag: "NoHolder" },
      { _tag: "NotHolder", agent: "a", holder: "b" },
      { _tag: "FromTask", agent: "a" },
      { _tag: "TargetIsTask", target: "a" },
      { _tag: "TargetHoldsFloor", target: "a" },
      { _tag: "NotFirst", first: "a" }
    ]
    const reasons = all.map(HandoffRules.reason)
    assert.strictEqual(new Set(reasons).size, all.length)
    for (const reason of reasons) assert.isFalse(reason.endsWith("."), `${reason}: the output adds the full stop`)
  })
})
