/**
 * Long-running tools (seed 003, rules 2, 4 and 9): progress, results told when the agent is
 * idle, deferred handoffs, duplicates, cancellation, close, paused owners.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, Layer, Schema } from "effect"
import { drive, until } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, AgentTask, Handoff, Tool } from "../../src/index.ts"
import * as Diagnostics from "../../src/Diagnostics.ts"
import { assertEveryCallAnswered, assertOneFloor, eventsOfAgentAfter, handoffSeq } from "../helpers.ts"

const job = (
  name: string,
  options: {
    readonly duration?: Duration.Input
    readonly result?: () => unknown
    readonly onDuplicate?: Tool.DuplicatePolicy
    readonly cancellable?: boolean
  } = {}
) =>
  Tool.make(name, {
    description: `${name} (slow)`,
    parameters: Schema.Struct({ id: Schema.optional(Schema.String) }),
    ...(options.onDuplicate ? { onDuplicate: options.onDuplicate } : {}),
    ...(options.cancellable ? { cancellable: true } : {}),
    handler: ({ id }, { progress }) =>
      progress(`${name} ${id ?? ""} started, please hold on`).pipe(
        Effect.andThen(Effect.sleep(options.duration ?? "10 seconds")),
        Effect.andThen(Effect.sync(() => (options.result ? options.result() : `${name} ${id ?? ""} finished`)))
      )
  })

const world = (tools: ReadonlyArray<Tool.Tool>) => {
  const b: Agent.Agent = Agent.make({
    name: "b",
    instructions: "You are B.",
    tools: [Tool.handoff("to_a", () => a)],
    onEnter: Agent.reply({ instructions: "b enters" }).pipe(Effect.asVoid)
  })
  const a: Agent.Agent = Agent.make({ name: "a", instructions: "You are A.", tools: [...tools, Tool.handoff("to_b", () => b)] })
  return { a, b }
}

const common: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { toolOutput: "please hold on" }, reply: { text: "Please hold on." } },
  { when: { toolOutput: "finished" }, reply: (r) => ({ text: `Done: ${r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join("; ") : ""}` }) },
  { when: { instructions: "b enters" }, reply: { text: "B here." } },
  { when: { user: "to b" }, reply: { toolCalls: [{ name: "to_b" }] } },
  { when: { user: "to a" }, reply: { toolCalls: [{ name: "to_a" }] } }
]
const scripted = (rules: ReadonlyArray<ScriptedModel.Rule>) => Layer.mergeAll(ScriptedModel.layer([...rules, ...common]), TextCapture.layer)

describe("long-running tools", () => {
  it.effect("seed 003: a deferred handoff finishing while the user is speaking applies; the new agent waits for the user", () => {
    const transferLater = Tool.make("check_and_transfer", {
      description: "check then transfer",
      handler: (_, { progress }) =>
        progress("Checking, please hold on").pipe(Effect.andThen(Effect.sleep("5 seconds")), Effect.as(Handoff.to(() => target)))
    })
    const target: Agent.Agent = Agent.make({ name: "target", instructions: "T", onEnter: Agent.reply({ instructions: "target enters" }).pipe(Effect.asVoid) })
    const agent = Agent.make({ name: "a", instructions: "A", tools: [transferLater] })
    return Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent })
      yield* drive(session.run("check it"))
      yield* session.setUserSpeaking(true)
      // While the user speaks the new agent's greeting waits, so wait for the floor to move.
      yield* drive(Effect.gen(function*() {
        while ((yield* session.currentAgent)?.name !== "target") yield* Effect.sleep("100 millis")
      }))
      // The floor moved while the user spoke; the new agent has not said anything yet.
      assert.strictEqual((yield* session.currentAgent)?.name, "target")
      assert.strictEqual(text.textOf("target"), "")
      yield* session.setUserSpeaking(false)
      yield* drive(session.idle)
      assert.strictEqual(text.textOf("target"), "Target here.")
      const events = yield* session.eventLog
      const handoff = handoffSeq(events, "target")
      const stopped = events.find((e) => e.type === "user_state_changed" && e.state === "listening")!.seq
      const spoke = events.find((e) => e.type === "agent_state_changed" && e.agent === "target" && e.state === "speaking")!.seq
      assert.isTrue(handoff < stopped && stopped < spoke)
      const executed = events.filter((e) => e.type === "function_tools_executed" && e.deferred)
      assert.isTrue(executed.length === 1 && executed[0]!.type === "function_tools_executed" && executed[0]!.hasHandoff)
      assertEveryCallAnswered(yield* session.history)
      assertOneFloor(events)
    }).pipe(Effect.provide(scripted([
      { when: { user: "check it" }, reply: { toolCalls: [{ name: "check_and_transfer" }] } },
      { when: { toolOutput: "Checking" }, reply: { text: "One moment." } },
      { when: { instructions: "target enters" }, reply: { text: "Target here." } }
    ])))
  })

  it.effect("seed 003: a deferred handoff waits for the agent's own reply to end, then applies", () => {
    const target: Agent.Agent = Agent.make({ name: "target", instructions: "T" })
    const transferLater = Tool.make("check_and_transfer", {
      description: "check then transfer",
      handler: (_, { progress }) =>
        progress("Checking, please hold on").pipe(Effect.andThen(Effect.sleep("1 second")), Effect.as(Handoff.to(target)))
    })
    const agent = Agent.make({ name: "a", instructions: "A", tools: [transferLater] })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent })
      yield* drive(session.run("check it", { waitForBackground: true }))
      const history = yield* session.history
      // The long "hold on" reply (3 s of chunks) was not cut by the tool finishing after 1 s.
      const reply = history.items.find((i) => i._tag === "Message" && i.role === "assistant")
      assert.isTrue(reply?._tag === "Message" && !reply.interrupted && reply.text === "Please wait while I check all of this.")
      const events = yield* session.eventLog
      const finished = events.find((e) => e.type === "speech_finished" && e.agent === "a")!.seq
      assert.isTrue(finished < handoffSeq(events, "target"))
      assert.deepStrictEqual(eventsOfAgentAfter(events, "a", handoffSeq(events, "target")), [])
    }).pipe(Effect.provide(scripted([
      { when: { user: "check it" }, reply: { toolCalls: [{ name: "check_and_transfer" }] } },
      { when: { toolOutput: "Checking" }, reply: { text: ["Please ", "wait ", "while ", "I ", "check ", "all ", "of ", "this."], chunkDelay: "400 millis" } }
    ])))
  })

  it.effect("rule 9: a deferred handoff after its agent lost the floor is recorded, not applied, and said why", () => {
    const target: Agent.Agent = Agent.make({ name: "target", instructions: "T" })
    const transferLater = Tool.make("check_and_transfer", {
      description: "check then transfer",
      handler: (_, { progress }) =>
        progress("Checking, please hold on").pipe(Effect.andThen(Effect.sleep("10 seconds")), Effect.as(Handoff.to(target)))
    })
    const { a } = world([transferLater])
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: a })
      yield* drive(session.run("check it"))
      yield* drive(session.run("to b"))
      const calls = model.requestsFor("a").length
      yield* drive(session.idleWithBackground)
      const events = yield* session.eventLog
      const notApplied = events.find((e) => e.type === "handoff_not_applied")
      assert.isTrue(notApplied?.type === "handoff_not_applied" && notApplied.agent === "a" && notApplied.to === "target")
      assert.include(notApplied?.type === "handoff_not_applied" ? notApplied.reason : "", "a no longer holds the floor")
      assert.strictEqual((yield* session.currentAgent)?.name, "b")
      assert.strictEqual(model.requestsFor("a").length, calls)
      const recorded = (yield* session.history).items.find((i) => i._tag === "FunctionCallOutput" && i.callId.endsWith(":result"))
      assert.isTrue(recorded?._tag === "FunctionCallOutput" && recorded.isError && recorded.agent === "a")
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(scripted([
      { when: { user: "check it" }, reply: { toolCalls: [{ name: "check_and_transfer" }] } },
      { when: { toolOutput: "Checking" }, reply: { text: "One moment." } }
    ])))
  })

  const duplicateRules = (name: string): ReadonlyArray<ScriptedModel.Rule> => [
    { when: { user: "first" }, reply: { toolCalls: [{ name, arguments: { id: "1" } }] } },
    { when: { user: "second" }, reply: { toolCalls: [{ name, arguments: { id: "2" } }] } },
    { when: { toolOutput: "already running" }, reply: { text: "That is still running." } }
  ]

  it.effect("duplicates, allow: both calls run and both results are told", () => {
    const { a } = world([job("report", { onDuplicate: "allow" })])
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* drive(session.run("first"))
      yield* drive(session.run("second"))
      yield* drive(session.idleWithBackground)
      const outputs = (yield* session.history).items.flatMap((i) => (i._tag === "FunctionCallOutput" ? [i.output] : []))
      assert.includeMembers(outputs, ["report 1 finished", "report 2 finished"])
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(scripted(duplicateRules("report"))))
  })

  it.effect("duplicates, reject: the second call gets an error output; the first goes on", () => {
    const { a } = world([job("report", { onDuplicate: "reject", cancellable: true })])
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* drive(session.run("first"))
      const second = yield* drive(session.run("second"))
      const error = second.expect.containsFunctionCallOutput({ name: "report", isError: true, output: "already running" })
      assert.include(error.output, "or cancel it")
      yield* drive(session.idleWithBackground)
      const outputs = (yield* session.history).items.flatMap((i) => (i._tag === "FunctionCallOutput" ? [i.output] : []))
      assert.include(outputs, "report 1 finished")
      assert.notInclude(outputs, "report 2 finished")
    }).pipe(Effect.provide(scripted(duplicateRules("report"))))
  })

  it.effect("duplicates, replace: the first call is cancelled and recorded so; the second runs", () => {
    const { a } = world([job("report", { onDuplicate: "replace" })])
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* drive(session.run("first"))
      yield* drive(session.run("second"))
      yield* drive(session.idleWithBackground)
      const outputs = (yield* session.history).items.flatMap((i) => (i._tag === "FunctionCallOutput" ? [[i.output, i.status]] : []))
      assert.isTrue(outputs.some(([o, s]) => s === "cancelled" && o!.includes("replaced by a newer call")))
      assert.isTrue(outputs.some(([o]) => o === "report 2 finished"))
      assert.isFalse(outputs.some(([o]) => o === "report 1 finished"))
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(scripted(duplicateRules("report"))))
  })

  it.effect("the model lists running background tools and cancels one", () => {
    const { a } = world([job("export_data", { cancellable: true, duration: "1 hour" })])
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const session = yield* AgentSession.start({ agent: a })
      yield* drive(session.run("export everything"))
      const listed = yield* drive(session.run("what is running?"))
      const list = listed.expect.containsFunctionCallOutput({ name: "list_background_tools" })
      assert.match(list.output, /export_data\(.*\) running for \d+s, cancellable/)
      const cancel = yield* drive(session.run("cancel it"))
      cancel.expect.containsFunctionCallOutput({ name: "cancel_background_tool", output: "Cancelled export_data" })
      yield* drive(session.idleWithBackground)
      const history = yield* session.history
      assert.isTrue(history.items.some((i) => i._tag === "FunctionCallOutput" && i.status === "cancelled" && i.output.includes("cancelled on request")))
      assert.isTrue(model.requests[0]!.tools.includes("cancel_background_tool"))
      assertEveryCallAnswered(history)
    }).pipe(Effect.provide(scripted([
      { when: { user: "export everything" }, reply: { toolCalls: [{ name: "export_data" }] } },
      { when: { user: "what is running" }, reply: { toolCalls: [{ name: "list_background_tools" }] } },
      { when: { toolOutput: "running for" }, reply: { text: "The export is running." } },
      {
        when: { user: "cancel it" },
        reply: (r) => {
          const call = JSON.stringify(r.prompt.content).match(/(call_\d+): export_data/)
          return { toolCalls: [{ name: "cancel_background_tool", arguments: { call_id: call?.[1] ?? "?" } }] }
        }
      },
      { when: { toolOutput: "Cancelled export_data" }, reply: { text: "Cancelled." } }
    ])))
  })

  it.effect("rule 4: closing the session during a background tool records a cancelled output", () => {
    const { a } = world([job("export_data", { duration: "1 hour" })])
    return Effect.gen(function*() {
      const before = Diagnostics.snapshot()
      const session = yield* AgentSession.start({ agent: a })
      yield* drive(session.run("export everything"))
      yield* session.close
      const history = yield* session.history
      const cancelled = history.items.find((i) => i._tag === "FunctionCallOutput" && i.status === "cancelled")
      assert.isTrue(cancelled?._tag === "FunctionCallOutput" && cancelled.output.includes("the session closed"))
      assertEveryCallAnswered(history)
      const events = yield* session.eventLog
      assert.strictEqual(events.at(-1)?.type, "close")
      assert.deepStrictEqual(Diagnostics.snapshot(), before)
    }).pipe(Effect.provide(scripted([{ when: { user: "export everything" }, reply: { toolCalls: [{ name: "export_data" }] } }])))
  })

  it.effect("a background tool of a paused agent reports after the transfer back", () => {
    const { a } = world([job("report", { duration: "30 seconds" })])
    return Effect.gen(function*() {
      const model = yield* ScriptedModel.ScriptedModel
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: a })
      yield* drive(session.run("first"))
      yield* drive(session.run("to b"))
      yield* drive(session.idleWithBackground)
      // Finished while a was paused: nothing told yet, no model call by a.
      assert.notInclude(text.textOf("a"), "Done")
      const callsWhilePaused = model.requestsFor("a").length
      const back = yield* drive(session.run("to a"))
      back.expect.containsAgentHandoff({ from: "b", to: "a", resumed: true })
      back.expect.containsFunctionCallOutput({ agent: "a", output: "report 1 finished" })
      back.expect.containsMessage({ agent: "a", content: "Done: report 1 finished" })
      // Back on the floor, a replies to the transfer (it has no onResume) and then tells the result.
      assert.strictEqual(model.requestsFor("a").length, callsWhilePaused + 2)
      assertEveryCallAnswered(yield* session.history)
      assertOneFloor(yield* session.eventLog)
    }).pipe(Effect.provide(scripted(duplicateRules("report"))))
  })

  it.effect("a session tool keeps running across a handoff and reports to whoever holds the floor", () => {
    const { a } = world([])
    const report = job("report", { duration: "30 seconds" })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a, tools: [report] })
      yield* drive(session.run("first"))
      yield* drive(session.run("to b"))
      yield* drive(session.idleWithBackground)
      const history = yield* session.history
      const told = history.items.find((i) => i._tag === "FunctionCallOutput" && i.output === "report 1 finished")
      assert.strictEqual(told?._tag === "FunctionCallOutput" ? told.agent : undefined, "b")
      assert.isTrue(history.items.some((i) => i._tag === "Message" && i.agent === "b" && i.text === "Done: report 1 finished"))
    }).pipe(Effect.provide(scripted(duplicateRules("report"))))
  })

  it.effect("a background tool awaiting an AgentTask waits for its agent to hold the floor (no deadlock)", () => {
    const confirm: AgentTask.AgentTask<string> = AgentTask.make<string>({
      name: "confirm",
      instructions: "Confirm.",
      tools: [Tool.make("confirmed", { description: "", handler: () => AgentTask.complete(confirm, "yes") })],
      onEnter: Agent.reply({ instructions: "ask to confirm" }).pipe(Effect.asVoid)
    })
    const needsConfirmation = Tool.make("order", {
      description: "order, then confirm",
      handler: (_, { progress }) =>
        progress("Ordering, please hold on").pipe(
          Effect.andThen(Effect.sleep("5 seconds")),
          Effect.andThen(AgentTask.run(confirm)),
          Effect.map((answer) => `order confirmed: ${answer}`)
        )
    })
    const { a } = world([needsConfirmation])
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: a })
      yield* drive(session.run("order it"))
      yield* drive(session.run("to b"))
      const wait = yield* Effect.forkChild(session.idle)
      yield* drive(Fiber.join(wait))
      // Still with b: the task waits until a holds the floor again.
      yield* until(() => false, { limit: "10 seconds" }).pipe(Effect.ignore)
      assert.strictEqual((yield* session.currentAgent)?.name, "b")
      const back = yield* drive(session.run("to a"))
      back.expect.containsAgentHandoff({ from: "a", to: "confirm", kind: "task" })
      const done = yield* drive(session.run("yes", { waitForBackground: true }))
      done.expect.containsAgentHandoff({ from: "confirm", to: "a", kind: "return" })
      done.expect.containsFunctionCallOutput({ output: "order confirmed: yes" })
      assertEveryCallAnswered(yield* session.history)
    }).pipe(Effect.provide(scripted([
      { when: { user: "order it" }, reply: { toolCalls: [{ name: "order" }] } },
      { when: { toolOutput: "Ordering" }, reply: { text: "Ordering." } },
      { when: { instructions: "ask to confirm" }, reply: { text: "Confirm the order?" } },
      { when: { user: "yes", agent: "confirm" }, reply: { toolCalls: [{ name: "confirmed" }] } },
      { when: { toolOutput: "order confirmed" }, reply: { text: "Your order is confirmed." } }
    ])))
  })

  it.effect("rule 6, rule 9: a task's tool that went to the background completes the task when it finishes (the caller resumes)", () => {
    const lookup: AgentTask.AgentTask<string> = AgentTask.make<string>({
      name: "lookup",
      instructions: "Look it up.",
      tools: [Tool.make("search", {
        description: "search, slowly",
        handler: (_, { progress }) =>
          progress("Searching, please hold on").pipe(
            Effect.andThen(Effect.sleep("2 seconds")),
            Effect.andThen(AgentTask.complete(lookup, "found it in the archive"))
          )
      })],
      onEnter: Agent.reply({ instructions: "start searching" }).pipe(Effect.asVoid)
    })
    const main: Agent.Agent = Agent.make({
      name: "main",
      instructions: "Main.",
      tools: [Tool.make("find", { description: "find", handler: () => AgentTask.run(lookup) })]
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: main })
      const result = yield* drive(session.run("find it", { waitForBackground: true }))
      result.expect.containsAgentHandoff({ from: "main", to: "lookup", kind: "task" })
      result.expect.containsMessage({ agent: "lookup", content: "Searching now." })
      // Before, the completion waited for a batch that had already concluded: the task never
      // returned.
      result.expect.containsAgentHandoff({ from: "lookup", to: "main", kind: "return" })
      result.expect.containsFunctionCallOutput({ name: "find", output: "found it in the archive" })
      result.expect.containsMessage({ agent: "main", content: "Found it." })
      assert.strictEqual((yield* session.currentAgent)?.name, "main")
      // The search's own output ("lookup completed.") is recorded when its fiber ends, after
      // the return; lookup says nothing more.
      const history = yield* session.history
      assertEveryCallAnswered(history)
      const events = yield* session.eventLog
      const returned = events.find((e) => e.type === "agent_handoff" && e.from === "lookup" && e.to === "main")!.seq
      assert.deepStrictEqual(
        eventsOfAgentAfter(events, "lookup", returned).filter((e) => e.type !== "conversation_item_added" || e.item._tag === "Message"),
        []
      )
    }).pipe(Effect.provide(scripted([
      { when: { user: "find it", agent: "main" }, reply: { toolCalls: [{ name: "find" }] } },
      { when: { instructions: "start searching", agent: "lookup" }, reply: { toolCalls: [{ name: "search" }] } },
      { when: { toolOutput: "Searching", agent: "lookup" }, reply: { text: "Searching now." } },
      { when: { toolOutput: "found it", agent: "main" }, reply: { text: "Found it." } }
    ])))
  })
})
