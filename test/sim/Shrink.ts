/**
 * Shrinks a failing scenario: tries smaller variants one at a time (drop an agent, a task, a
 * group, a tool, an action, a response, a call, a hook; zero a delay) and keeps each one that
 * still fails, until no candidate fails or the budget of runs is spent. Removing a part also
 * removes every reference to it, so each candidate is a valid scenario.
 */
import { Effect } from "effect"
import type { AgentSpec, HookSpec, ResponseSpec, ResponseTable, Scenario, TaskSpec, ToolSpec } from "./Scenario.ts"
import { size } from "./Scenario.ts"
import { greedy } from "../../src/sim/Shrink.ts"

/** Removes every reference to the named agents, tasks or groups (and groups left empty). */
const dropNames = (s: Scenario, dropped: ReadonlySet<string>): Scenario => {
  const names = new Set(dropped)
  for (const g of s.groups) if (g.tasks.every((t) => names.has(t))) names.add(g.name)
  const keepTool = (t: ToolSpec) => !(t.target && names.has(t.target))
  const hook = (h: HookSpec | undefined): HookSpec | undefined =>
    h && h.target && names.has(h.target) ? { delay: h.delay, action: "none" } : h
  const agent = <A extends AgentSpec>(a: A): A => ({
    ...a,
    tools: a.tools.filter(keepTool),
    onEnter: hook(a.onEnter),
    onExit: hook(a.onExit),
    onResume: hook(a.onResume)
  })
  const sessionTools = s.sessionTools?.filter(keepTool)
  return pruneCalls({
    ...s,
    ...(sessionTools ? { sessionTools } : {}),
    agents: s.agents.filter((a) => !names.has(a.name)).map(agent),
    tasks: s.tasks.filter((t) => !names.has(t.name)).map(agent),
    groups: s.groups.filter((g) => !names.has(g.name)).map((g) => ({ ...g, tasks: g.tasks.filter((t) => !names.has(t)) })),
    responses: Object.fromEntries(Object.entries(s.responses).filter(([name]) => !names.has(name))),
    timeline: s.timeline.filter((a) => !((a.op === "handoff" || a.op === "handBack") && names.has(a.target)))
  })
}

/** Removes calls to tools the answering agent no longer has (except deliberate unknown tools). */
const pruneCalls = (s: Scenario): Scenario => {
  const shared = (s.sessionTools ?? []).map((t) => t.name)
  const tools = new Map([...s.agents, ...s.tasks].map((a) => [a.name, new Set([...a.tools.map((t) => t.name), ...shared])]))
  const responses: Record<string, ResponseTable> = {}
  for (const [name, table] of Object.entries(s.responses)) {
    const has = tools.get(name) ?? new Set()
    const fix = (r: ResponseSpec): ResponseSpec => ({ ...r, calls: r.calls.filter((c) => c.tool === "no_such_tool" || has.has(c.tool)) })
    responses[name] = { user: table.user.map(fix), tool: table.tool.map(fix), other: table.other.map(fix) }
  }
  return { ...s, responses }
}

const mapAgent = (s: Scenario, name: string, f: <A extends AgentSpec>(a: A) => A): Scenario => ({
  ...s,
  agents: s.agents.map((a) => (a.name === name ? f(a) : a)),
  tasks: s.tasks.map((t) => (t.name === name ? f(t) : t)) as ReadonlyArray<TaskSpec>
})

const mapTable = (s: Scenario, name: string, f: (t: ResponseTable) => ResponseTable): Scenario => ({
  ...s,
  responses: { ...s.responses, [name]: f(s.responses[name]!) }
})

/** Smaller variants of `s`, biggest cuts first. */
export function* candidates(s: Scenario): Generator<Scenario> {
  for (const a of s.agents.slice(1)) yield dropNames(s, new Set([a.name]))
  for (const t of s.tasks) yield dropNames(s, new Set([t.name]))
  for (const g of s.groups) yield dropNames(s, new Set([g.name]))
  for (let i = 0; i < s.timeline.length; i++) yield { ...s, timeline: s.timeline.filter((_, j) => j !== i) }
  for (const tool of s.sessionTools ?? []) yield pruneCalls({ ...s, sessionTools: s.sessionTools!.filter((t) => t !== tool) })
  const rt = s.realtime
  if (rt) {
    const { realtime: _, ...textOnly } = s
    yield textOnly
    if (rt.rejectEvery) yield { ...s, realtime: { capabilities: rt.capabilities, ackDelay: rt.ackDelay, responseDelay: rt.responseDelay } }
    if (rt.ackDelay > 0) yield { ...s, realtime: { ...rt, ackDelay: 0 } }
    if (rt.responseDelay > 0) yield { ...s, realtime: { ...rt, responseDelay: 0 } }
    // Each optional fault and late transcript, left out in turn.
    for (const key of ["transcriptMs", "stallEvery", "failEvery", "dropEvery", "untranscribedEvery"] as const) {
      if (rt[key] === undefined) continue
      const { [key]: _, ...without } = rt
      yield { ...s, realtime: without }
    }
  }
  for (const a of [...s.agents, ...s.tasks]) {
    for (const tool of a.tools) {
      yield pruneCalls(mapAgent(s, a.name, (x) => ({ ...x, tools: x.tools.filter((t) => t !== tool) })))
    }
    for (const hook of ["onEnter", "onExit", "onResume"] as const) {
      if (a[hook] !== undefined) yield mapAgent(s, a.name, (x) => ({ ...x, [hook]: undefined }))
    }
  }
  for (const [name, table] of Object.entries(s.responses)) {
    for (const trigger of ["user", "tool", "other"] as const) {
      const list = table[trigger]
      for (let i = 0; i < list.length; i++) {
        if (list.length > 1) yield mapTable(s, name, (t) => ({ ...t, [trigger]: list.filter((_, j) => j !== i) }))
        const r = list[i]!
        const set = (next: ResponseSpec) => mapTable(s, name, (t) => ({ ...t, [trigger]: list.map((x, j) => (j === i ? next : x)) }))
        for (let c = 0; c < r.calls.length; c++) yield set({ ...r, calls: r.calls.filter((_, k) => k !== c) })
        if (r.text.length > 0) yield set({ ...r, text: [], chunkDelay: 0 })
        if (r.delay > 0) yield set({ ...r, delay: 0 })
        if (r.chunkDelay > 0) yield set({ ...r, chunkDelay: 0 })
        if (r.error) yield set({ ...r, error: false })
      }
    }
  }
  for (const a of [...s.agents, ...s.tasks]) {
    for (const tool of a.tools) {
      if (tool.delay > 0) yield mapAgent(s, a.name, (x) => ({ ...x, tools: x.tools.map((t) => (t === tool ? { ...t, delay: 0 } : t)) }))
    }
    for (const hook of ["onEnter", "onExit", "onResume"] as const) {
      const h = a[hook]
      if (h && h.action !== "none") yield mapAgent(s, a.name, (x) => ({ ...x, [hook]: { delay: h.delay, action: "none" } }))
      if (h && h.delay > 0) yield mapAgent(s, a.name, (x) => ({ ...x, [hook]: { ...h, delay: 0 } }))
    }
  }
  for (let i = 0; i < s.timeline.length; i++) {
    const a = s.timeline[i]!
    if (a.after > 0) yield { ...s, timeline: s.timeline.map((x, j) => (j === i ? { ...x, after: 0 } : x)) }
  }
}

export interface ShrinkResult {
  readonly scenario: Scenario
  readonly runs: number
}

/** Greedy shrinking (the package's loop, src/sim/Shrink.ts): keeps any smaller candidate for which `fails` holds. */
export const shrink = <E, R>(
  scenario: Scenario,
  fails: (s: Scenario) => Effect.Effect<boolean, E, R>,
  budget = 400
): Effect.Effect<ShrinkResult, E, R> =>
  Effect.map(greedy(scenario, { candidates, size, fails, budget }), ({ runs, value }) => ({ scenario: value, runs }))
