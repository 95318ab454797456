/**
 * A schedule over a user's own agents, as plain data drawn from a seed: what the scripted model
 * answers each agent (words, calls to its tools with arguments from their schemas, a failed
 * stream), the faults injected around its tools (a delay before the real handler, or a failure
 * instead of it), and what the application does (user turns, interruptions, the user speaking,
 * forced handoffs, `say`, a close) at random times. Plain data, so a failure shrinks by dropping
 * parts of it and prints as a test.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import type { Agent } from "../Agent.ts"
import { argumentsFor } from "./Arguments.ts"
import { Prng } from "./Prng.ts"

/**
 * One tool call of a scripted answer. `bad`: the arguments do not decode (an error output is due).
 *
 * @since 0.1.0
 * @category models
 */
export interface Call {
  readonly tool: string
  readonly args: unknown
  readonly bad?: boolean | undefined
}

/**
 * One scripted model answer: after `delay` ms, `text` streamed in pieces, then `calls`; `error`
 * fails the stream after the text.
 *
 * @since 0.1.0
 * @category models
 */
export interface Answer {
  readonly delay: number
  readonly text: ReadonlyArray<string>
  readonly calls: ReadonlyArray<Call>
  readonly error?: boolean | undefined
}

/**
 * What happens around every call of one tool: `delay` ms before the real handler runs, or, with
 * `fails`, a `ToolError` after the delay instead of the handler.
 *
 * @since 0.1.0
 * @category models
 */
export interface Fault {
  readonly delay: number
  readonly fails: boolean
}

/**
 * What the application does, `after` ms after the previous action.
 *
 * @since 0.1.0
 * @category models
 */
export type Action =
  | { readonly op: "run"; readonly after: number; readonly text: string; readonly wait: boolean }
  | { readonly op: "send"; readonly after: number; readonly text: string }
  | { readonly op: "interrupt"; readonly after: number }
  | { readonly op: "speak"; readonly after: number; readonly duration: number }
  | { readonly op: "handoff"; readonly after: number; readonly target: string }
  | { readonly op: "say"; readonly after: number; readonly text: string }
  | { readonly op: "close"; readonly after: number }

/**
 * An agent's answers: the n-th request after a user turn gets `user[n]`, the n-th after tool
 * outputs (or anything else) `other[n]`, cycling.
 *
 * @since 0.1.0
 * @category models
 */
export interface Answers {
  readonly user: ReadonlyArray<Answer>
  readonly other: ReadonlyArray<Answer>
}

/**
 * One schedule: the model's answers and the tools' faults by agent, and the application's actions.
 *
 * @since 0.1.0
 * @category models
 */
export interface Schedule {
  readonly seed: number
  /** By agent name. */
  readonly answers: Readonly<Record<string, Answers>>
  /** By agent name, then tool name. */
  readonly faults: Readonly<Record<string, Readonly<Record<string, Fault>>>>
  readonly actions: ReadonlyArray<Action>
}

const USER_TEXTS = ["hello", "I need help", "the weather in Paris?", "transfer me please", "what was that?", "cancel it", "thanks"]

const text = (rng: Prng, agent: string): Array<string> => {
  const n = rng.weighted([[3, 0], [4, 1], [2, 2], [1, 3]] as const)
  return Array.from({ length: n }, (_, i) => `${agent} says ${i + 1}. `)
}

const answer = (rng: Prng, agent: Agent, calls: number): Answer => {
  const chosen: Array<Call> = []
  for (let i = 0; i < calls && agent.tools.length > 0; i++) {
    if (rng.chance(0.04)) {
      chosen.push({ tool: "no_such_tool", args: {}, bad: true })
      continue
    }
    const tool = rng.pick(agent.tools)
    const { args, bad } = argumentsFor(rng, tool)
    chosen.push(bad ? { tool: tool.name, args, bad } : { tool: tool.name, args })
  }
  return {
    delay: rng.delay(400),
    text: text(rng, agent.name),
    calls: chosen,
    ...(rng.chance(0.03) ? { error: true } : {})
  }
}

const answers = (rng: Prng, agent: Agent): Answers => {
  const calls = () => rng.weighted([[3, 0], [4, 1], [2, 2], [1, 3]] as const)
  return {
    user: Array.from({ length: rng.int(1, 4) }, () => answer(rng, agent, calls())),
    other: Array.from({ length: rng.int(1, 2) }, () => answer(rng, agent, rng.chance(0.2) ? calls() : 0))
  }
}

const faults = (rng: Prng, agent: Agent): Record<string, Fault> => {
  const out: Record<string, Fault> = {}
  for (const tool of agent.tools) {
    const kind = rng.weighted([[5, "none"], [3, "slow"], [2, "failing"]] as const)
    if (kind === "none") continue
    out[tool.name] = { delay: rng.delay(kind === "slow" ? 2000 : 600, 0.2), fails: kind === "failing" }
  }
  return out
}

const timeline = (rng: Prng, agents: ReadonlyArray<string>): Array<Action> => {
  const count = rng.int(2, 9)
  const actions: Array<Action> = []
  let closed = false
  let afterClose = rng.int(0, 1)
  const kinds = [[5, "run"], [3, "send"], [1.5, "interrupt"], [1, "speak"], [1.5, "handoff"], [0.5, "say"], [0.6, "close"]] as const
  for (let i = 0; i < count; i++) {
    if (closed && afterClose-- <= 0) break
    const op = rng.weighted(kinds.filter(([, k]) => !(closed && k === "close")))
    const after = rng.delay(1500, 0.25)
    switch (op) {
      case "run":
        actions.push({ op, after, text: rng.pick(USER_TEXTS), wait: rng.chance(0.8) })
        break
      case "send":
        actions.push({ op, after, text: rng.pick(USER_TEXTS) })
        break
      case "speak":
        actions.push({ op, after, duration: rng.delay(1500, 0) })
        break
      case "handoff":
        actions.push({ op, after, target: rng.pick(agents) })
        break
      case "say":
        actions.push({ op, after, text: "One moment, please." })
        break
      case "interrupt":
        actions.push({ op, after })
        break
      case "close":
        closed = true
        actions.push({ op, after })
    }
  }
  if (!actions.some((a) => a.op === "run" || a.op === "send")) actions.unshift({ op: "run", after: 0, text: "hello", wait: true })
  return actions
}

/**
 * The schedule of `seed` over `agents` (the entry agent first): each part from its own fork of
 * the seed's PRNG, so the same seed and agents always give the same schedule.
 *
 * @since 0.1.0
 * @category constructors
 */
export const generate = (seed: number, agents: ReadonlyArray<Agent>): Schedule => {
  const root = new Prng(seed)
  const model = root.fork("agent-answers")
  const tools = root.fork("agent-faults")
  const table: Record<string, Answers> = {}
  const injected: Record<string, Record<string, Fault>> = {}
  for (const agent of agents) {
    table[agent.name] = answers(model, agent)
    const f = faults(tools, agent)
    if (Object.keys(f).length > 0) injected[agent.name] = f
  }
  return { seed, answers: table, faults: injected, actions: timeline(root.fork("agent-timeline"), agents.map((a) => a.name)) }
}

const formatAction = (a: Action): string => {
  const at = `+${a.after}ms`
  switch (a.op) {
    case "run":
      return `${at} run "${a.text}"${a.wait ? "" : " (no wait)"}`
    case "send":
      return `${at} send "${a.text}"`
    case "speak":
      return `${at} the user speaks ${a.duration}ms`
    case "handoff":
      return `${at} forced handoff to ${a.target}`
    case "say":
      return `${at} say "${a.text}"`
    default:
      return `${at} ${a.op}`
  }
}

const formatAnswer = (a: Answer): string => {
  const parts: Array<string> = []
  if (a.delay > 0) parts.push(`+${a.delay}ms`)
  if (a.text.length) parts.push(JSON.stringify(a.text.join("")))
  for (const c of a.calls) parts.push(`${c.tool}(${typeof c.args === "string" ? c.args : JSON.stringify(c.args)})${c.bad ? "!bad" : ""}`)
  if (a.error) parts.push("ERROR")
  return parts.join(" ") || "(empty)"
}

/**
 * A schedule on a few lines.
 *
 * @since 0.1.0
 * @category formatting
 */
export const format = (s: Schedule): string => {
  const lines = [`seed ${s.seed}`]
  for (const [agent, table] of Object.entries(s.answers)) {
    if (table.user.length) lines.push(`  model ${agent} (user turns): ${table.user.map(formatAnswer).join(" ; ")}`)
    if (table.other.length) lines.push(`  model ${agent} (after tools): ${table.other.map(formatAnswer).join(" ; ")}`)
  }
  for (const [agent, tools] of Object.entries(s.faults)) {
    for (const [tool, f] of Object.entries(tools)) lines.push(`  tool ${agent}.${tool}: ${f.fails ? "fails" : "slow"} after ${f.delay}ms`)
  }
  lines.push(`  timeline: ${s.actions.map(formatAction).join(" | ")}`)
  return lines.join("\n")
}

const isEmpty = (args: unknown) => typeof args === "object" && args !== null && Object.keys(args).length === 0

/**
 * What the shrinker minimises: every action, answer, call, fault and non-zero delay counts.
 *
 * @since 0.1.0
 * @category utils
 */
export const size = (s: Schedule): number =>
  Object.keys(s.answers).length + s.actions.reduce((n, a) => n + 3 + (a.after > 0 ? 1 : 0), 0) +
  Object.values(s.answers).reduce((n, t) =>
    n + [...t.user, ...t.other].reduce((m, a) => m + 1 + a.calls.reduce((k, c) => k + 2 + (isEmpty(c.args) ? 0 : 1), 0) + a.text.length + (a.delay > 0 ? 1 : 0) + (a.error ? 1 : 0), 0), 0) +
  Object.values(s.faults).reduce((n, t) => n + Object.values(t).reduce((m, f) => m + 2 + (f.delay > 0 ? 1 : 0), 0), 0)
