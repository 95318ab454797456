/**
 * Random scenarios from a seed: 2-5 agents with tools of every kind, AgentTasks (awaited from
 * tools and hooks), a TaskGroup started from an onEnter, a scripted model with parallel batches
 * (two handoffs in one response included) and a timeline of user inputs (`send`, `run`),
 * interruptions, forced handoffs, `say`/`generateReply` and a close at a random time.
 *
 * Each part draws from its own `Prng.fork`, so a new kind of decision added to one part keeps
 * the other parts of old seeds as they were.
 */
import { Prng } from "./Prng.ts"
import type {
  Action,
  AgentSpec,
  CallSpec,
  ContextPolicyName,
  GroupSpec,
  HookAction,
  HookSpec,
  ResponseSpec,
  ResponseTable,
  Scenario,
  TaskSpec,
  ToolKind,
  ToolSpec
} from "./Scenario.ts"
import { GUARDED } from "./Scenario.ts"

const PREFIX: Record<ToolKind, string> = {
  immediate: "now",
  slow: "slow",
  failing: "fail",
  dying: "die",
  typed: "typed",
  handoff: "to",
  task: "ask",
  complete: "done",
  giveUp: "quit",
  longRunning: "long",
  hangUp: "hang_up",
  speaks: "speak",
  odd: "odd",
  waitsForItself: "self_wait",
  approval: "approve",
  timed: "timed"
}

const contextPolicy = (rng: Prng): ContextPolicyName => rng.weighted([[6, "full"], [2, "none"], [2, "last1"]])

const makeTool = (rng: Prng, index: number, kind: ToolKind, fields: Partial<ToolSpec> = {}): ToolSpec => {
  const target = fields.target
  const base = `${PREFIX[kind]}${target ? `_${target}` : ""}_${index}`
  const delay = kind === "immediate" ? 0 : rng.delay(kind === "slow" ? 1500 : 800)
  return {
    name: base,
    kind,
    delay,
    ...(target ? { target } : {}),
    ...(kind === "handoff" ? { context: contextPolicy(rng) } : {}),
    ...(kind === "failing" && rng.chance(0.5) ? { plainError: true } : {}),
    ...fields
  }
}

const agentTools = (rng: Prng, self: string, agents: ReadonlyArray<string>, tasks: ReadonlyArray<string>): Array<ToolSpec> => {
  const count = rng.int(1, 5)
  const others = agents.filter((a) => a !== self)
  const kinds: Array<readonly [number, ToolKind]> = [
    [3, "immediate"],
    [4, "slow"],
    [2, "failing"],
    [1, "dying"],
    [2, "typed"],
    [5, "handoff"]
  ]
  if (tasks.length > 0) kinds.push([2, "task"])
  const tools: Array<ToolSpec> = []
  for (let i = 0; i < count; i++) {
    const kind = rng.weighted(kinds)
    if (kind === "handoff") {
      // Now and then a handoff to itself: refused, with an error output.
      const target = rng.chance(0.05) ? self : rng.pick(others)
      tools.push(makeTool(rng, i, kind, { target }))
    } else if (kind === "task") {
      tools.push(makeTool(rng, i, kind, { target: rng.pick(tasks) }))
    } else {
      tools.push(makeTool(rng, i, kind))
    }
  }
  if (!tools.some((t) => t.kind === "handoff") && rng.chance(0.85)) {
    tools.push(makeTool(rng, count, "handoff", { target: rng.pick(others) }))
  }
  return tools
}

const hook = (rng: Prng, actions: ReadonlyArray<readonly [number, HookAction]>, targets: {
  readonly tasks: ReadonlyArray<string>
  readonly groups: ReadonlyArray<string>
}): HookSpec => {
  const usable = actions.filter(([, a]) =>
    (a !== "task" || targets.tasks.length > 0) && (a !== "group" || targets.groups.length > 0)
  )
  const action = rng.weighted(usable)
  const delay = rng.chance(0.25) ? rng.delay(600, 0) : 0
  const target = action === "task" ? rng.pick(targets.tasks) : action === "group" ? rng.pick(targets.groups) : undefined
  return { action, delay, ...(target ? { target } : {}) }
}

const makeAgent = (rng: Prng, name: string, agents: ReadonlyArray<string>, tasks: ReadonlyArray<string>, groups: ReadonlyArray<string>): AgentSpec => {
  const targets = { tasks, groups }
  return {
    name,
    tools: agentTools(rng, name, agents, tasks),
    onEnter: rng.chance(0.8)
      ? hook(rng, [[2, "none"], [6, "reply"], [2, "say"], [1, "task"], [1.5, "group"], [0.4, "fail"]], targets)
      : undefined,
    onExit: rng.chance(0.6) ? hook(rng, [[6, "none"], [1, "reply"], [0.4, "fail"]], targets) : undefined,
    onResume: rng.chance(0.6) ? hook(rng, [[3, "none"], [4, "reply"], [1, "say"]], targets) : undefined,
    maxToolSteps: rng.int(1, 3)
  }
}

const makeTask = (rng: Prng, index: number, name: string, agents: ReadonlyArray<string>, tasks: ReadonlyArray<string>): TaskSpec => {
  const tools: Array<ToolSpec> = [makeTool(rng, 0, "complete")]
  if (rng.chance(0.35)) tools.push(makeTool(rng, 1, "giveUp"))
  const extra = rng.int(0, 2)
  for (let i = 0; i < extra; i++) {
    const later = tasks.slice(index + 1)
    const kinds: Array<readonly [number, ToolKind]> = [[3, "immediate"], [3, "slow"], [2, "failing"], [2, "typed"], [0.7, "handoff"]]
    // A task can await a later task (never an earlier one: no cycles).
    if (later.length > 0) kinds.push([0.7, "task"])
    const kind = rng.weighted(kinds)
    const target = kind === "handoff" ? rng.pick(agents) : kind === "task" ? rng.pick(later) : undefined
    tools.push(makeTool(rng, i + 2, kind, target ? { target } : {}))
  }
  return {
    name,
    tools,
    onEnter: hook(rng, [[1, "none"], [8, "reply"], [1, "say"]], { tasks: [], groups: [] }),
    onExit: rng.chance(0.4) ? hook(rng, [[1, "none"]], { tasks: [], groups: [] }) : undefined,
    onResume: undefined,
    maxToolSteps: rng.int(1, 2),
    context: contextPolicy(rng)
  }
}

const text = (rng: Prng, name: string): Array<string> => {
  const n = rng.weighted([[3, 0], [4, 1], [2, 2], [1, 3]] as const)
  return Array.from({ length: n }, (_, i) => `${name}-${i} `)
}

const call = (rng: Prng, tool: ToolSpec | undefined): CallSpec => {
  if (!tool) return { tool: "no_such_tool" }
  if (tool.kind === "typed" && rng.chance(0.5)) return { tool: tool.name, badArgs: rng.chance(0.7) ? "schema" : "json" }
  return { tool: tool.name }
}

const response = (rng: Prng, agent: AgentSpec, calls: number, isTask: boolean): ResponseSpec => {
  const chosen: Array<CallSpec> = []
  const handoffs = agent.tools.filter((t) => t.kind === "handoff")
  const finishers = agent.tools.filter((t) => t.kind === "complete" || t.kind === "giveUp")
  for (let i = 0; i < calls; i++) {
    if (rng.chance(0.04)) {
      chosen.push(call(rng, undefined))
    } else if (isTask && i === 0 && finishers.length > 0 && rng.chance(0.5)) {
      chosen.push(call(rng, rng.pick(finishers)))
    } else {
      chosen.push(call(rng, rng.pick(agent.tools)))
    }
  }
  // Two handoffs in one batch (the second may repeat the first tool).
  if (calls > 0 && handoffs.length > 0 && rng.chance(0.15)) chosen.push(call(rng, rng.pick(handoffs)))
  const words = text(rng, agent.name)
  return {
    delay: rng.delay(400),
    text: words,
    chunkDelay: words.length > 1 ? rng.delay(150, 0.4) : 0,
    calls: rng.chance(0.5) ? chosen : rng.shuffle(chosen),
    ...(rng.chance(0.03) ? { error: true } : {})
  }
}

const responses = (rng: Prng, agent: AgentSpec, isTask: boolean): ResponseTable => {
  const calls = () => rng.weighted([[3, 0], [4, 1], [2, 2], [1.5, 3]] as const)
  const user = Array.from({ length: rng.int(1, 4) }, () => response(rng, agent, calls(), isTask))
  const tool = Array.from({ length: rng.int(1, 2) }, () => response(rng, agent, rng.chance(0.25) ? calls() : 0, isTask))
  const other = Array.from({ length: rng.int(1, 2) }, () => response(rng, agent, rng.chance(0.2) ? calls() : 0, isTask))
  return { user, tool, other }
}

const timeline = (rng: Prng, agents: ReadonlyArray<string>): Array<Action> => {
  const count = rng.int(2, 8)
  const actions: Array<Action> = []
  let input = 0
  let closed = false
  let afterClose = rng.int(0, 2)
  const kinds: ReadonlyArray<readonly [number, "run" | "send" | "interrupt" | "handoff" | "say" | "reply" | "idle" | "close"]> = [
    [5, "run"],
    [3, "send"],
    [1.5, "interrupt"],
    [1.5, "handoff"],
    [0.5, "say"],
    [0.5, "reply"],
    [0.5, "idle"],
    [0.6, "close"]
  ]
  for (let i = 0; i < count; i++) {
    if (closed && afterClose-- <= 0) break
    const op = rng.weighted(kinds.filter(([, k]) => !(closed && k === "close")))
    const after = rng.delay(1500, 0.25)
    switch (op) {
      case "run":
        actions.push({ op, after, input: input++, wait: rng.chance(0.8) })
        break
      case "send":
        actions.push({ op, after, input: input++ })
        break
      case "handoff":
        actions.push({ op, after, target: rng.pick(agents) })
        break
      case "close":
        closed = true
        actions.push({ op, after })
        break
      default:
        actions.push({ op, after })
    }
  }
  if (!actions.some((a) => a.op === "run" || a.op === "send")) actions.unshift({ op: "run", after: 0, input: input++, wait: true })
  return actions
}

/**
 * Later additions, each from its own fork (so the base scenario of a seed stays as it was):
 * long-running tools and the calls to them, the user speaking (barge-in), runs that wait for
 * background tools, a tool that hangs up, and going back to an earlier step of a TaskGroup.
 */
const extend = (root: Prng, s: Scenario): Scenario => {
  const rng = root.fork("extensions-1")
  const agentNames = s.agents.map((a) => a.name)
  const responses: Record<string, ResponseTable> = { ...s.responses }
  // Only answers to the user call the new tools: a reply to a background result that started
  // the same tool again would loop for ever (the application's loop, not baton's).
  const addCalls = (name: string, tool: string, chance: number) => {
    const table = responses[name]!
    responses[name] = { ...table, user: table.user.map((r) => (rng.chance(chance) ? { ...r, calls: [...r.calls, { tool }] } : r)) }
  }
  const agents = s.agents.map((agent) => {
    const extra: Array<ToolSpec> = []
    if (rng.chance(0.35)) {
      const handoff = rng.chance(0.4)
      const others = agentNames.filter((n) => n !== agent.name)
      const tool: ToolSpec = {
        name: `long${handoff ? "_to" : ""}_${agent.tools.length}`,
        kind: "longRunning",
        delay: rng.chance(0.7) ? 0 : rng.delay(300, 0),
        duration: rng.delay(3000, 0),
        updates: rng.weighted([[5, 0], [2, 1], [1, 2]] as const),
        onDuplicate: rng.weighted([[5, "allow"], [2, "reject"], [2, "replace"]] as const),
        ...(handoff ? { target: rng.pick(others) } : {})
      }
      extra.push(tool)
      addCalls(agent.name, tool.name, 0.3)
    }
    if (rng.chance(0.05)) {
      const tool: ToolSpec = { name: `hang_up_${agent.tools.length + extra.length}`, kind: "hangUp", delay: rng.delay(300) }
      extra.push(tool)
      addCalls(agent.name, tool.name, 0.1)
    }
    return extra.length ? { ...agent, tools: [...agent.tools, ...extra] } : agent
  })
  // A task after the first of a group may send the user back to an earlier step.
  for (const group of s.groups) {
    for (const task of group.tasks.slice(1)) if (rng.chance(0.3)) addCalls(task, "return_to_earlier_step", 0.15)
  }
  // A session tool: a long-running call that outlives handoffs and reports to the holder.
  const sessionTools: Array<ToolSpec> = []
  if (rng.chance(0.2)) {
    const handoff = rng.chance(0.3)
    sessionTools.push({
      name: `session${handoff ? "_to" : ""}_job`,
      kind: "longRunning",
      delay: 0,
      duration: rng.delay(3000, 0),
      updates: rng.weighted([[3, 0], [1, 1]] as const),
      ...(handoff ? { target: rng.pick(agentNames) } : {})
    })
    for (const agent of agents) if (rng.chance(0.5)) addCalls(agent.name, sessionTools[0]!.name, 0.3)
  }
  const timeline: Array<Action> = []
  for (const action of s.timeline) {
    if (rng.chance(0.12)) timeline.push({ op: "speak", after: rng.delay(800), duration: rng.delay(1500, 0) })
    timeline.push(action.op === "run" && rng.chance(0.25) ? { ...action, background: true } : action)
  }
  return { ...s, agents, responses, timeline, ...(sessionTools.length ? { sessionTools } : {}) }
}

/** Realtime agents (rules 7 and 8), from their own fork. */
const realtime = (root: Prng, s: Scenario): Scenario => {
  const rng = root.fork("realtime-1")
  if (!rng.chance(0.25)) return s
  const withRealtime: Scenario = {
    ...s,
    realtime: {
      capabilities: rng.chance(0.6) ? "openai" : "gemini",
      ackDelay: rng.delay(300),
      responseDelay: rng.delay(300),
      ...(rng.chance(0.25) ? { rejectEvery: rng.int(2, 6) } : {})
    }
  }
  // Dropped sockets: a fork of their own, so the scenarios drawn before it stay as they were.
  const drops = root.fork("drop-1")
  const dropEvery = drops.chance(0.2) ? drops.int(2, 6) : undefined
  // Responses the server fails (a server error mid-answer): a fork of their own too.
  const failing = root.fork("response-fail-1")
  const failEvery = failing.chance(0.15) ? failing.int(2, 6) : undefined
  // Requests a hung server never answers: a fork of their own too.
  const hangs = root.fork("stall-1")
  const stallEvery = hangs.chance(0.1) ? hangs.int(2, 6) : undefined
  return voice(root, {
    ...withRealtime,
    realtime: {
      ...withRealtime.realtime!,
      ...(dropEvery !== undefined ? { dropEvery } : {}),
      ...(failEvery !== undefined ? { failEvery } : {}),
      ...(stallEvery !== undefined ? { stallEvery } : {})
    }
  })
}

/** Spoken inputs into the holder's connection, answered by the server's own turn detection. */
const voice = (root: Prng, s: Scenario): Scenario => {
  const rng = root.fork("voice-1")
  if (!rng.chance(0.5)) return s
  const timeline: Array<Action> = []
  let input = 100
  for (const action of s.timeline) {
    if (rng.chance(0.3)) timeline.push({ op: "voice", after: rng.delay(1200), input: input++ })
    timeline.push(action)
  }
  if (input === 100) timeline.push({ op: "voice", after: rng.delay(600), input: input++ })
  // OpenAI's transcript may come after the answer started: from a fork of its own, so the
  // scenarios drawn before it stay as they were.
  const late = root.fork("transcript-1")
  const transcriptMs = s.realtime!.capabilities === "openai" && late.chance(0.4) ? late.delay(500, 0.2) : undefined
  // Transcriptions that fail (OpenAI says so; Gemini has no such event): a fork of their own too.
  const failing = root.fork("transcript-fail-1")
  const untranscribedEvery = s.realtime!.capabilities === "openai" && failing.chance(0.25) ? failing.int(2, 4) : undefined
  return {
    ...s,
    realtime: {
      ...s.realtime!,
      speechMs: rng.delay(800, 0),
      ...(transcriptMs !== undefined ? { transcriptMs } : {}),
      ...(untranscribedEvery !== undefined ? { untranscribedEvery } : {})
    },
    timeline
  }
}

/** Cascaded voice (VAD, STT, TTS with slow and failing engines), from its own fork; not with realtime. */
const cascade = (root: Prng, s: Scenario): Scenario => {
  const rng = root.fork("cascade-1")
  if (s.realtime || !rng.chance(0.2)) return s
  const timeline: Array<Action> = []
  let input = 200
  for (const action of s.timeline) {
    // the pipeline reports the user's speech itself
    if (action.op === "speak") continue
    if (rng.chance(0.35)) timeline.push({ op: "utter", after: rng.delay(1500), input: input++, duration: rng.int(100, 1500) })
    if (rng.chance(0.1)) timeline.push({ op: "noise", after: rng.delay(1500), duration: rng.int(60, 1200) })
    timeline.push(action)
  }
  if (input === 200) timeline.push({ op: "utter", after: rng.delay(600), input: input++, duration: rng.int(100, 1500) })
  // Streams that drop: a fork of their own, so the scenarios drawn before it stay as they were.
  const drops = root.fork("stt-drop-1")
  const sttDropEvery = drops.chance(0.2) ? drops.int(2, 5) : undefined
  // Faster turns (issue 36): adaptive endpointing, preemptive replies, words to cut a reply, false
  // interruptions; a fork of their own too.
  const turns = root.fork("turns-1")
  const endpointingMs = rng.int(200, 700)
  const turnOptions = {
    maxEndpointingMs: endpointingMs + turns.int(0, 1500),
    preemptive: turns.chance(0.7),
    ...(turns.chance(0.3) ? { trailingEvery: turns.int(2, 4) } : {}),
    // (one word: the interims gate the cut; more would hold "uN please" back until the reply
    // ends, which the quiescence check cannot time)
    ...(turns.chance(0.3) ? { minInterruptionWords: 1 } : {}),
    ...(turns.chance(0.3) ? { falseInterruptionTimeoutMs: turns.int(200, 3000) } : {}),
    resumeFalseInterruption: turns.chance(0.8)
  }
  return {
    ...s,
    timeline,
    cascade: {
      endpointingMs,
      interruptionMs: rng.int(100, 700),
      sttDelay: rng.delay(400),
      ...(rng.chance(0.2) ? { sttFailEvery: rng.int(2, 5) } : {}),
      ...(sttDropEvery !== undefined ? { sttDropEvery } : {}),
      interims: rng.chance(0.5),
      ttsDelay: rng.delay(300),
      msPerChar: rng.int(5, 60),
      ...(rng.chance(0.2) ? { ttsFailEvery: rng.int(2, 5) } : {}),
      ...turnOptions
    }
  }
}

/**
 * What programs do with the API that the base draw does not (docs/rules.md, "Calls and
 * contexts"), from its own fork: tools that start a say or a reply and await it or not, tools
 * returning values JSON cannot hold, a tool awaiting its own speech, hooks that await their own
 * reply or say (whose tools may run tasks and hand off), a voice line that stops sending audio
 * after the words.
 */
const programUses = (root: Prng, s: Scenario): Scenario => {
  const rng = root.fork("program-uses-1")
  const responses: Record<string, ResponseTable> = { ...s.responses }
  // Calls only in answers to the user: an answer to a tool output that called the tool again
  // would loop (the application's loop, not baton's).
  const addCalls = (name: string, tool: string, chance: number) => {
    const table = responses[name]!
    responses[name] = { ...table, user: table.user.map((r) => (rng.chance(chance) ? { ...r, calls: [...r.calls, { tool }] } : r)) }
  }
  const withTools = <A extends AgentSpec>(agent: A, chance: number): A => {
    const extra: Array<ToolSpec> = []
    const add = (tool: ToolSpec, callChance: number) => {
      extra.push(tool)
      addCalls(agent.name, tool.name, callChance)
    }
    const index = () => agent.tools.length + extra.length
    if (rng.chance(chance)) {
      const speech = rng.chance(0.5) ? "say" : "reply"
      add({ name: `${PREFIX.speaks}_${index()}`, kind: "speaks", delay: rng.chance(0.5) ? 0 : rng.delay(300, 0), speech, awaits: rng.chance(0.7) }, 0.4)
    }
    if (rng.chance(chance * 0.6)) {
      const shape = rng.pick(["cyclic", "bigint", "undefined", "function", "symbol", "huge", "collections", "throwing"] as const)
      add({ name: `${PREFIX.odd}_${index()}`, kind: "odd", delay: rng.chance(0.5) ? 0 : rng.delay(200, 0), shape }, 0.3)
    }
    if (rng.chance(chance * 0.1)) add({ name: `${PREFIX.waitsForItself}_${index()}`, kind: "waitsForItself", delay: 0 }, 0.3)
    return extra.length ? { ...agent, tools: [...agent.tools, ...extra] } : agent
  }
  const agents = s.agents.map((agent) => {
    const tooled = withTools(agent, 0.3)
    if (!rng.chance(0.15)) return tooled
    const action = rng.chance(0.7) ? "awaitReply" : "awaitSay"
    return { ...tooled, onEnter: { action, delay: rng.chance(0.25) ? rng.delay(400, 0) : 0 } satisfies HookSpec }
  })
  const tasks = s.tasks.map((task) => withTools(task, 0.2))
  // A line that stops sending after the words (push-to-talk released, a muted track): no silence
  // follows, and the pipeline must hear the gap as silence.
  const stopping = root.fork("audio-stops-1")
  const stopped = s.timeline.map((action) => (action.op === "utter" && stopping.chance(0.25) ? { ...action, stops: true } : action))
  return { ...s, agents, tasks, responses, timeline: leaseSteps(root, s, stopped) }
}

/**
 * Interrupts and closes that land on the steps of a realtime lease: after an action, at the
 * moment its update is acknowledged, its response starts, or the two together (a few ms either
 * side), where the random times of the base draw rarely fall.
 */
const leaseSteps = (root: Prng, s: Scenario, timeline: ReadonlyArray<Action>): ReadonlyArray<Action> => {
  const rt = s.realtime
  if (!rt) return timeline
  const rng = root.fork("lease-steps-1")
  const steps = [0, rt.ackDelay, rt.responseDelay, rt.ackDelay + rt.responseDelay]
  const out: Array<Action> = []
  for (const action of timeline) {
    out.push(action)
    if (action.op === "close" || !rng.chance(0.15)) continue
    const after = Math.max(0, rng.pick(steps) + rng.int(-2, 2))
    out.push(rng.chance(0.9) ? { op: "interrupt", after } : { op: "close", after })
  }
  return out
}

/**
 * A person holding the floor (issue 35), from its own fork: in a text scenario, now and then the
 * operator takes the floor at an action and hands it back to an agent a few actions later (or
 * never). Realtime and cascaded scenarios are left as they are.
 */
const humans = (root: Prng, s: Scenario): Scenario => {
  if (s.realtime || s.cascade) return s
  const rng = root.fork("human-holder-1")
  if (!rng.chance(0.25)) return s
  const agents = s.agents.map((a) => a.name)
  const out: Array<Action> = []
  let holding = false
  for (const action of s.timeline) {
    if (action.op !== "close" && rng.chance(holding ? 0.3 : 0.15)) {
      const after = rng.chance(0.3) ? 0 : rng.delay(300, 0)
      out.push(holding ? { op: "handBack", after, target: rng.pick(agents) } : { op: "takeOver", after })
      holding = !holding
    }
    out.push(action)
  }
  return { ...s, timeline: out }
}

/**
 * Tool approval and guardrails (issue 37), from their own fork, in text scenarios: some agents
 * get a tool that needs approval (the program approves it, rejects it, or never answers and
 * closes the session, `delay` after the request), called in some answers to the user; some get
 * an output guardrail that trips on a word a few of their answers to the user say (the speech is
 * cut there and a fixed line said).
 */
const approvalsAndGuardrails = (root: Prng, s: Scenario): Scenario => {
  if (s.realtime || s.cascade) return s
  const rng = root.fork("approvals-guardrails-1")
  const responses: Record<string, ResponseTable> = { ...s.responses }
  const agents = s.agents.map((agent): AgentSpec => {
    let next: AgentSpec = agent
    if (rng.chance(0.25)) {
      const decision = rng.weighted([[5, "approve"], [3, "reject"], [1, "close"]] as const)
      const tool: ToolSpec = { name: `${PREFIX.approval}_${agent.tools.length}`, kind: "approval", delay: rng.delay(2_000, 0), decision }
      next = { ...next, tools: [...next.tools, tool] }
      const table = responses[agent.name]!
      responses[agent.name] = { ...table, user: table.user.map((r) => (rng.chance(0.4) ? { ...r, calls: [...r.calls, { tool: tool.name }] } : r)) }
    }
    if (rng.chance(0.2)) {
      next = { ...next, guardrail: true }
      const table = responses[agent.name]!
      responses[agent.name] = {
        ...table,
        user: table.user.map((r) =>
          r.text.length > 0 && rng.chance(0.5)
            ? { ...r, text: r.text.map((chunk, i) => (i === Math.floor(r.text.length / 2) ? `${chunk} ${GUARDED}. ` : chunk)) }
            : r
        )
      }
    }
    return next
  })
  return { ...s, agents, responses }
}

/**
 * Tool timeouts, user away and turn hooks (issue 37), from their own fork, in text scenarios:
 * some agents get a tool with a timeout that every other call runs past, called in some answers
 * to the user; some an `onUserTurnCompleted` hook that adds a note or stops replies; some an
 * `onUserAway` hook. Now and then the session gets a `userAwayTimeout` and the user a silence
 * longer than it (an `idle` action, after which the user speaks again or not).
 */
const timeoutsAwayTurns = (root: Prng, s: Scenario): Scenario => {
  if (s.realtime || s.cascade) return s
  const rng = root.fork("timeouts-away-turns-1")
  const responses: Record<string, ResponseTable> = { ...s.responses }
  const agents = s.agents.map((agent): AgentSpec => {
    let next: AgentSpec = agent
    if (rng.chance(0.25)) {
      const timeout = rng.int(20, 300) * 10
      const tool: ToolSpec = {
        name: `${PREFIX.timed}_${agent.tools.length}`,
        kind: "timed",
        timeout,
        delay: timeout + rng.int(1, 300) * 10,
        duration: rng.int(0, timeout / 10 - 1) * 10
      }
      next = { ...next, tools: [...next.tools, tool] }
      const table = responses[agent.name]!
      responses[agent.name] = { ...table, user: table.user.map((r) => (rng.chance(0.4) ? { ...r, calls: [...r.calls, { tool: tool.name }] } : r)) }
    }
    if (rng.chance(0.2)) next = { ...next, turnHook: rng.pick(["add", "stop"] as const) }
    if (rng.chance(0.3)) next = { ...next, onUserAway: rng.pick(["say", "close"] as const) }
    return next
  })
  if (!rng.chance(0.3)) return { ...s, agents, responses }
  const userAwayTimeout = rng.int(50, 500) * 10
  const silence: Action = { op: "idle", after: userAwayTimeout + rng.delay(3_000, 0.5) }
  const at = rng.int(0, s.timeline.length)
  return { ...s, agents, responses, userAwayTimeout, timeline: [...s.timeline.slice(0, at), silence, ...s.timeline.slice(at)] }
}

export const generate = (
  seed: number,
  options: {
    readonly programUses?: boolean
    readonly humans?: boolean
    readonly approvals?: boolean
    readonly timeouts?: boolean
  } = {}
): Scenario => {
  const root = new Prng(seed)
  const shape = root.fork("shape")
  const agentNames = Array.from({ length: shape.int(2, 5) }, (_, i) => `a${i}`)
  const taskNames = Array.from({ length: shape.weighted([[4, 0], [3, 1], [2, 2], [1, 3]] as const) }, (_, i) => `t${i}`)
  const groups: Array<GroupSpec> = []
  if (taskNames.length > 0 && shape.chance(0.5)) {
    const members = shape.shuffle(taskNames).slice(0, shape.int(1, Math.min(3, taskNames.length)))
    groups.push({ name: "g0", tasks: members })
  }
  const groupNames = groups.map((g) => g.name)
  const agentRng = root.fork("agents")
  const agents = agentNames.map((name) => makeAgent(agentRng, name, agentNames, taskNames, groupNames))
  const taskRng = root.fork("tasks")
  const tasks = taskNames.map((name, i) => makeTask(taskRng, i, name, agentNames, taskNames))
  const modelRng = root.fork("model")
  const table: Record<string, ResponseTable> = {}
  for (const agent of agents) table[agent.name] = responses(modelRng, agent, false)
  for (const task of tasks) table[task.name] = responses(modelRng, task, true)
  const base = cascade(root, realtime(root, extend(root, {
    seed,
    agents,
    tasks,
    groups,
    responses: table,
    timeline: timeline(root.fork("timeline"), agentNames)
  })))
  const used = options.programUses === false ? base : programUses(root, base)
  const withHumans = options.humans === false ? used : humans(root, used)
  const approved = options.approvals === false ? withHumans : approvalsAndGuardrails(root, withHumans)
  return options.timeouts === false ? approved : timeoutsAwayTurns(root, approved)
}
