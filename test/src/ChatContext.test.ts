import { assert, describe, it } from "@effect/vitest"
import * as ChatContext from "../../src/ChatContext.ts"
import { toPrompt } from "../../src/ChatPrompt.ts"
import { applyContextPolicy } from "../../src/Handoff.ts"

const { message, functionCall, functionCallOutput, agentHandoff } = ChatContext

const conversation = () =>
  ChatContext.ChatContext.make([
    message("system", "be nice"),
    message("user", "one"),
    message("assistant", "reply one"),
    functionCall({ callId: "c1", name: "lookup", arguments: "{\"q\":1}" }),
    functionCallOutput({ callId: "c1", name: "lookup", output: "found", isError: false, status: "ok" }),
    agentHandoff({ from: "a", to: "b", kind: "handoff", resumed: false }),
    message("user", "two"),
    message("assistant", "reply two"),
    message("user", "three")
  ])

describe("ChatContext", () => {
  it("copies with filters", () => {
    const ctx = conversation()
    assert.deepStrictEqual(ctx.copy({ excludeFunctionCalls: true }).items.map((i) => i._tag).filter((t) => t.startsWith("Function")), [])
    assert.isFalse(ctx.copy({ excludeInstructions: true }).items.some((i) => i._tag === "Message" && i.role === "system"))
    assert.isFalse(ctx.copy({ excludeHandoffs: true }).items.some((i) => i._tag === "AgentHandoff"))
    assert.strictEqual(ctx.copy().length, ctx.length)
  })

  it("a copy that leaves nothing out keeps the items, and appends to either side stay apart", () => {
    const ctx = conversation().copy({ excludeInstructions: true }) // the system message goes
    const before = ctx.items.map((i) => i.id)
    const copy = ctx.copy({ excludeInstructions: true }) // nothing left to exclude
    assert.deepStrictEqual(copy.items.map((i) => i.id), before)
    const onCopy = copy.append(message("user", "for the new agent"))
    const onOriginal = ctx.append(message("user", "for the old agent"))
    const texts = (c: ChatContext.ChatContext) => c.items.map((i) => (i._tag === "Message" ? i.text : i._tag))
    assert.deepStrictEqual(texts(onCopy).slice(-1), ["for the new agent"])
    assert.deepStrictEqual(texts(onOriginal).slice(-1), ["for the old agent"])
    assert.strictEqual(onCopy.length, before.length + 1)
    assert.strictEqual(onOriginal.length, before.length + 1)
    assert.deepStrictEqual(ctx.items.map((i) => i.id), before)
    assert.deepStrictEqual(copy.items.map((i) => i.id), before)
    // a later prompt of either sees only its own items
    const prompt = (c: ChatContext.ChatContext) => JSON.stringify(toPrompt(c).content)
    assert.include(prompt(onCopy), "for the new agent")
    assert.notInclude(prompt(onCopy), "for the old agent")
    assert.include(prompt(onOriginal), "for the old agent")
    assert.notInclude(prompt(onOriginal), "for the new agent")
    // an exclusion after the first item still keeps the order
    assert.deepStrictEqual(
      texts(conversation().copy({ excludeHandoffs: true, excludeFunctionCalls: true })),
      ["be nice", "one", "reply one", "two", "reply two", "three"]
    )
  })

  it("truncates to the last N turns, keeping instructions and never splitting a call from its output", () => {
    const ctx = conversation()
    const last2 = ctx.truncate(2)
    assert.deepStrictEqual(
      last2.items.map((i) => (i._tag === "Message" ? i.text : i._tag)),
      ["be nice", "two", "reply two", "three"]
    )
    const last3 = ctx.truncate(3)
    assert.isTrue(last3.items.some((i) => i._tag === "FunctionCall"))
    assert.isTrue(last3.items.some((i) => i._tag === "FunctionCallOutput"))
    assert.strictEqual(ctx.truncate(10).length, ctx.length)
  })

  it("inserts an item before another (a turn recorded after its answer), leaving the context it came from unchanged", () => {
    const ctx = conversation()
    const answer = ctx.at(-2)! // "reply two"
    const late = message("user", "two and a half")
    const placed = ctx.insertBefore(late, answer.id)
    const texts = (c: ChatContext.ChatContext) => c.items.flatMap((i) => (i._tag === "Message" ? [i.text] : []))
    assert.deepStrictEqual(texts(placed).slice(-4), ["two", "two and a half", "reply two", "three"])
    assert.strictEqual(placed.length, ctx.length + 1)
    assert.strictEqual(placed.at(-3), late)
    assert.deepStrictEqual(texts(ctx).slice(-3), ["two", "reply two", "three"])
    // An append after it goes on from the new order; the old context is not grown by it.
    const next = placed.append(message("assistant", "four"))
    assert.deepStrictEqual(texts(next).slice(-2), ["three", "four"])
    assert.strictEqual(ctx.length, placed.length - 1)
    // Without an item to go before: at the end, as an append.
    assert.deepStrictEqual(texts(ctx.insertBefore(late, "no-such-id")).slice(-1), ["two and a half"])
    assert.deepStrictEqual(texts(ctx.insertBefore(late, undefined)).slice(-1), ["two and a half"])
  })

  it("finds the first of some ids in its own order", () => {
    const ctx = conversation()
    const [, first, second] = ctx.items
    assert.strictEqual(ctx.firstOf(["missing", second!.id, first!.id]), first!.id)
    assert.strictEqual(ctx.firstOf(["missing"]), undefined)
    assert.strictEqual(ctx.firstOf([]), undefined)
  })

  it("merges by id, appending only what is new", () => {
    const base = conversation()
    const extra = base.append(message("user", "four"))
    const merged = base.merge(extra)
    assert.strictEqual(merged.length, base.length + 1)
    assert.strictEqual(merged.merge(extra).length, merged.length)
    const withoutCalls = ChatContext.ChatContext.empty.merge(base, { excludeFunctionCalls: true })
    assert.isFalse(withoutCalls.items.some((i) => i._tag === "FunctionCall"))
  })

  it("converts to an effect/ai prompt", () => {
    const prompt = toPrompt(conversation(), { instructions: "You are A.", extraInstructions: "be brief" })
    assert.deepStrictEqual(prompt.content.map((m) => m.role), [
      "system", // agent instructions
      "system", // the context's own system message
      "user",
      "assistant", // text + tool call merged
      "tool",
      "user",
      "assistant",
      "user",
      "system" // per-reply instructions
    ])
    const assistant = prompt.content[3]!
    assert.isTrue(assistant.role === "assistant" && assistant.content.map((p) => p.type).join() === "text,tool-call")
    const tool = prompt.content[4]!
    assert.isTrue(tool.role === "tool" && tool.content[0]!.type === "tool-result")
  })

  it("leaves out calls still running and outputs without calls", () => {
    const ctx = ChatContext.ChatContext.make([
      message("user", "go"),
      functionCall({ callId: "pending", name: "slow", arguments: "{}" }),
      functionCallOutput({ callId: "orphan", name: "x", output: "?", isError: false, status: "ok" })
    ])
    const prompt = toPrompt(ctx)
    assert.deepStrictEqual(prompt.content.map((m) => m.role), ["user"])
    assert.deepStrictEqual(ctx.pendingCalls().map((c) => c.callId), ["pending"])
  })

  it("applies context policies", () => {
    const ctx = conversation()
    assert.isFalse(applyContextPolicy("full", ctx).items.some((i) => i._tag === "Message" && i.role === "system"))
    assert.strictEqual(applyContextPolicy("none", ctx).length, 0)
    const lastTurn = applyContextPolicy({ lastTurns: 1 }, ctx)
    assert.deepStrictEqual(lastTurn.items.map((i) => (i._tag === "Message" ? i.text : i._tag)), ["three"])
    const custom = applyContextPolicy((c) => c.copy({ excludeFunctionCalls: true }).truncate(2), ctx)
    assert.deepStrictEqual(custom.items.map((i) => (i._tag === "Message" ? i.text : i._tag)), ["two", "reply two", "three"])
  })

  it("an append shares the buffer along a chain and never changes an earlier context", () => {
    const base = conversation()
    const a = base.append(message("user", "four"))
    const b = base.append(message("user", "other four")) // base's buffer already grew: copies
    const a2 = a.append(message("assistant", "reply four"))
    assert.strictEqual(base.length, 9)
    assert.strictEqual(base.at(-1)!._tag === "Message" && (base.at(-1) as ChatContext.Message).text, "three")
    assert.strictEqual((a.at(-1) as ChatContext.Message).text, "four")
    assert.strictEqual((b.at(-1) as ChatContext.Message).text, "other four")
    assert.strictEqual(a.length, 10)
    assert.strictEqual(a2.length, 11)
    assert.deepStrictEqual([...a].map((i) => i.id), a.items.map((i) => i.id))
    assert.isFalse(a.has(a2.at(-1)!.id))
    assert.isTrue(a2.has(a2.at(-1)!.id))
    // two sessions starting from the shared empty context do not see each other's items
    const s1 = ChatContext.ChatContext.empty.append(message("user", "s1"))
    const s2 = ChatContext.ChatContext.empty.append(message("user", "s2"))
    assert.deepStrictEqual([s1.length, s2.length, ChatContext.ChatContext.empty.length], [1, 1, 0])
    assert.strictEqual((s2.at(0) as ChatContext.Message).text, "s2")
  })

  it("a prompt built along a growing conversation equals the prompt built from scratch", () => {
    // A seeded walk over turns with tool calls answered at once, later, or never, and handoffs.
    let seed = 7
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    let ctx = ChatContext.ChatContext.make([message("system", "be nice")])
    const pending: Array<ChatContext.FunctionCall> = []
    for (let step = 0; step < 400; step++) {
      const r = rand()
      if (r < 0.3) ctx = ctx.append(message("user", `u${step}`))
      else if (r < 0.5) ctx = ctx.append(message("assistant", rand() < 0.1 ? "" : `a${step}`))
      else if (r < 0.65) {
        const call = functionCall({ callId: `c${step}`, name: "t", arguments: "{}" })
        ctx = ctx.append(call)
        if (rand() < 0.5) ctx = ctx.append(functionCallOutput({ callId: call.callId, name: "t", output: "ok", isError: false, status: "ok" }))
        else pending.push(call)
      } else if (r < 0.8 && pending.length > 0) {
        const call = pending.splice(Math.floor(rand() * pending.length), 1)[0]!
        ctx = ctx.append(functionCallOutput({ callId: call.callId, name: "t", output: "late", isError: false, status: "ok" }))
      } else if (r < 0.85) ctx = ctx.append(agentHandoff({ from: "a", to: "b", kind: "handoff", resumed: false }))
      else ctx = ctx.append(message("system", `s${step}`))
      const incremental = toPrompt(ctx, { instructions: "i", extraInstructions: step % 3 === 0 ? "x" : undefined })
      const scratch = toPrompt(ChatContext.ChatContext.make(ctx.items), { instructions: "i", extraInstructions: step % 3 === 0 ? "x" : undefined })
      assert.deepStrictEqual(incremental.content, scratch.content, `step ${step}`)
    }
  })

  it("a prompt never changes after it is built, and an older context on the same buffer gets its own", () => {
    // The prefix's messages are shared along the buffer's chain: later turns must not leak into
    // prompts already handed to a provider, nor into the prompt of an older context.
    let ctx = ChatContext.ChatContext.make([message("system", "be nice")])
    const kept: Array<{ readonly ctx: ChatContext.ChatContext; readonly prompt: ReturnType<typeof toPrompt>; readonly snapshot: string }> = []
    for (let turn = 0; turn < 60; turn++) {
      ctx = ctx.append(message("user", `u${turn}`))
      if (turn % 4 === 0) {
        const call = functionCall({ callId: `c${turn}`, name: "t", arguments: "{}" })
        ctx = ctx.append(call, functionCallOutput({ callId: call.callId, name: "t", output: "ok", isError: false, status: "ok" }))
      }
      ctx = ctx.append(message("assistant", `a${turn}`))
      const prompt = toPrompt(ctx, { instructions: "i" })
      kept.push({ ctx, prompt, snapshot: JSON.stringify(prompt.content) })
      // now and then an older context of the same chain asks for its prompt again
      if (turn % 7 === 6) {
        const older = kept[turn - 5]!
        assert.deepStrictEqual(toPrompt(older.ctx, { instructions: "i" }).content, older.prompt.content, `older context at ${turn}`)
      }
    }
    // a branch from an older context (its append copies the buffer) converts right too
    const branch = kept[10]!.ctx.append(message("user", "branch"))
    assert.deepStrictEqual(toPrompt(branch).content, toPrompt(ChatContext.ChatContext.make(branch.items)).content)
    for (const [turn, { prompt, snapshot }] of kept.entries()) assert.strictEqual(JSON.stringify(prompt.content), snapshot, `prompt of turn ${turn}`)
    assert.strictEqual(kept[59]!.prompt.content.length, 1 + 1 + 60 * 2 + 15 * 2)
  })
})
