/**
 * A simulation scenario as plain data: agents, tasks, groups, the scripted model's answers and
 * a timeline of what the application does. It is generated from a seed (Generate.ts), built
 * into agents, tools and a model by an interpreter (Interpret.ts) and shrunk by dropping parts
 * of it (Shrink.ts). Every reference is by name, so removing a part only needs a filter.
 *
 * To extend it (realtime connections, long-running tools), add a kind here, a case in the
 * interpreter, and a generator branch behind an option: old seeds keep their meaning as long as
 * the new branch draws from its own `Prng.fork`.
 */

/** What a tool does when called. */
export type ToolKind =
  | "immediate" // returns a value at once
  | "slow" // returns a value after `delay`
  | "failing" // fails after `delay`: a ToolError (model sees it) or a plain error (error event)
  | "dying" // dies after `delay` (error event)
  | "typed" // takes { n: Int }; the model may send bad arguments
  | "handoff" // hands off to `target` (an agent) after `delay`
  | "task" // awaits the AgentTask `target` after `delay`
  | "complete" // (tasks only) completes its task after `delay`
  | "giveUp" // (tasks only) fails its task
  | "longRunning" // reports progress after `delay`, then `updates` more, ends after `duration` (a handoff with `target`)
  | "hangUp" // closes the session from inside the tool
  | "speaks" // starts a `say` or a reply (`speech`), awaits it or not (`awaits`), then returns
  | "odd" // returns a value JSON cannot hold as it is (`shape`)
  | "waitsForItself" // awaits the speech it was called in (an error output: it would wait for ever)
  | "timed" // has a `timeout`: its 1st, 3rd, ... calls run `delay` (past it, cut), the others `duration` (within it)
  | "approval" // needs approval: `delay` after it is asked, the program approves, rejects, or closes the session (`decision`)

/** What an `odd` tool returns. */
export type OddShape = "cyclic" | "bigint" | "undefined" | "function" | "symbol" | "huge" | "collections" | "throwing"

/** The shapes the model reads as an error output (the others are rendered). */
export const oddShapeIsError = (shape: OddShape): boolean => shape === "function" || shape === "symbol" || shape === "throwing"

export type ContextPolicyName = "full" | "none" | "last1"

export interface ToolSpec {
  readonly name: string
  readonly kind: ToolKind
  readonly delay: number
  /** handoff: an agent name; task: a task name. */
  readonly target?: string | undefined
  readonly context?: ContextPolicyName | undefined
  /** failing: fail with a plain error (not a ToolError), which is reported as an error event. */
  readonly plainError?: boolean | undefined
  /** longRunning: time from the first progress report to the result (ms). */
  readonly duration?: number | undefined
  /** longRunning: progress reports between the first one and the result. */
  readonly updates?: number | undefined
  /** longRunning: what a second call does while one runs. */
  readonly onDuplicate?: "allow" | "reject" | "replace" | undefined
  /** speaks: what it starts, and whether it waits for it to end. */
  readonly speech?: "say" | "reply" | undefined
  readonly awaits?: boolean | undefined
  /** odd: the value it returns. */
  readonly shape?: OddShape | undefined
  /** timed: the tool's timeout (ms), between `duration` and `delay`. */
  readonly timeout?: number | undefined
  /** approval: what the program answers (`close`: it never answers, and closes the session). */
  readonly decision?: "approve" | "reject" | "close" | undefined
}

/** `awaitReply` / `awaitSay`: the hook starts a reply (or a say) and waits for it to end. */
export type HookAction = "none" | "reply" | "say" | "task" | "group" | "fail" | "awaitReply" | "awaitSay"

export interface HookSpec {
  readonly delay: number
  readonly action: HookAction
  /** task: a task name; group: a group name. */
  readonly target?: string | undefined
}

export interface AgentSpec {
  readonly name: string
  readonly tools: ReadonlyArray<ToolSpec>
  readonly onEnter?: HookSpec | undefined
  readonly onExit?: HookSpec | undefined
  readonly onResume?: HookSpec | undefined
  readonly maxToolSteps: number
  /** `onUserTurnCompleted`: "add" adds a developer note to every turn; "stop" stops the reply to
   * turns of an even input number (StopResponse) and lets the others through. */
  readonly turnHook?: "add" | "stop" | undefined
  /** `onUserAway`: "say" asks once whether the user is there; "close" asks, then ends the session. */
  readonly onUserAway?: "say" | "close" | undefined
  /** An output guardrail trips on the word GUARDED in what it says: the speech is cut, a fixed line said. */
  readonly guardrail?: boolean | undefined
}

/** The word an agent's output guardrail trips on. */
export const GUARDED = "GUARDED"

/** An AgentTask: an agent whose tools can complete it. */
export interface TaskSpec extends AgentSpec {
  readonly context: ContextPolicyName
}

export interface GroupSpec {
  readonly name: string
  readonly tasks: ReadonlyArray<string>
}

export interface CallSpec {
  /** A tool name of the answering agent, or a name it does not have (an unknown tool). */
  readonly tool: string
  /** typed tools: send arguments that fail the schema (or are not JSON). */
  readonly badArgs?: "schema" | "json" | undefined
}

export interface ResponseSpec {
  readonly delay: number
  /** Text deltas streamed before the calls. */
  readonly text: ReadonlyArray<string>
  readonly chunkDelay: number
  readonly calls: ReadonlyArray<CallSpec>
  /** The stream fails after the text (an error event from the model). */
  readonly error?: boolean | undefined
}

/** What last came before a model request. */
export type Trigger = "user" | "tool" | "other"

/** One agent's answers, by trigger; the n-th request of a trigger gets answer n (cycling). */
export type ResponseTable = Readonly<Record<Trigger, ReadonlyArray<ResponseSpec>>>

export type Action =
  | { readonly op: "send"; readonly after: number; readonly input: number }
  /** `wait`: the timeline goes on only once the run has resolved; `background`: it waits for background tools. */
  | { readonly op: "run"; readonly after: number; readonly input: number; readonly wait: boolean; readonly background?: boolean }
  /** The user speaks for `duration` ms (barge-in: nothing starts, the current reply is cut). */
  | { readonly op: "speak"; readonly after: number; readonly duration: number }
  | { readonly op: "interrupt"; readonly after: number }
  /** Realtime scenarios: the user says input n into the holder's connection (the server's turn detection answers it). */
  | { readonly op: "voice"; readonly after: number; readonly input: number }
  | { readonly op: "handoff"; readonly after: number; readonly target: string }
  /** A person (the sim's operator, a scripted participant) takes the floor: it answers each of
   * the user's turns with words of its own until it hands the floor back. */
  | { readonly op: "takeOver"; readonly after: number }
  /** The operator hands the floor back to agent `target`, with a note for its next reply. */
  | { readonly op: "handBack"; readonly after: number; readonly target: string }
  /** Cascade scenarios: the user says input n as audio for `duration` ms (VAD, STT, endpointing, barge-in). */
  | {
    readonly op: "utter"
    readonly after: number
    readonly input: number
    readonly duration: number
    /** The line stops sending after the words (a released push-to-talk, a muted track): no
     * silence follows, and the pipeline must hear the gap as silence. */
    readonly stops?: boolean
  }
  /** Cascade scenarios: speech with no words (a cough over a reply; a false interruption when long). */
  | { readonly op: "noise"; readonly after: number; readonly duration: number }
  | { readonly op: "say"; readonly after: number }
  | { readonly op: "reply"; readonly after: number }
  | { readonly op: "idle"; readonly after: number }
  | { readonly op: "close"; readonly after: number }

/** Agents talk through a scripted realtime model (ScriptedRealtime) instead of the text model. */
export interface RealtimeSpec {
  /** What the model lets change on a live connection ("openai": everything, "gemini": only the context it appends). */
  readonly capabilities: "openai" | "gemini"
  readonly ackDelay: number
  readonly responseDelay: number
  /** Every n-th update gets an error answer (the holder falls back to a fresh connection). */
  readonly rejectEvery?: number | undefined
  /** How long a spoken input takes (voice actions). */
  readonly speechMs?: number | undefined
  /** The user's transcript comes this long after the end of the turn, the answer not waiting
   * for it (OpenAI transcribes on its own time); without it, before the answer. */
  readonly transcriptMs?: number | undefined
  /** Every spoken input whose number is a multiple of this is not transcribed (OpenAI's
   * `input_audio_transcription.failed`): its transcript comes without words. */
  readonly untranscribedEvery?: number | undefined
  /** Every n-th response loses its connection after its first text, as a dropped socket does. */
  readonly dropEvery?: number | undefined
  /** Every n-th response fails on the server after its first text (status `failed`). */
  readonly failEvery?: number | undefined
  /** Every n-th response request is never answered (a hung server). */
  readonly stallEvery?: number | undefined
}

/** Agents listen and speak through the cascaded voice pipeline with scripted engines (Cascade.ts). */
export interface CascadeSpec {
  /** Silence after speech before the turn ends (ms). */
  readonly endpointingMs: number
  /** Speech over a reply that cuts it (ms). */
  readonly interruptionMs: number
  /** The STT's final comes this long after the utterance ends; every n-th utterance fails. */
  readonly sttDelay: number
  readonly sttFailEvery?: number | undefined
  /** The STT's stream drops (its transcripts end with an error) at every n-th utterance's end,
   * before answering it. */
  readonly sttDropEvery?: number | undefined
  readonly interims: boolean
  /** The TTS answers a sentence after this long, with this much audio a character; every n-th fails. */
  readonly ttsDelay: number
  readonly msPerChar: number
  readonly ttsFailEvery?: number | undefined
  /** Silence that ends a turn whose words trail off (ms); every n-th input's words do ("... and"). */
  readonly maxEndpointingMs?: number | undefined
  readonly trailingEvery?: number | undefined
  /** Replies start on the final transcript, before the silence is over. */
  readonly preemptive?: boolean | undefined
  /** Speech over a reply cuts it only with this many words. */
  readonly minInterruptionWords?: number | undefined
  /** A cut whose speech had no words resumes the reply (after this long without words). */
  readonly resumeFalseInterruption?: boolean | undefined
  readonly falseInterruptionTimeoutMs?: number | undefined
}

export interface Scenario {
  readonly seed: number
  readonly realtime?: RealtimeSpec | undefined
  readonly cascade?: CascadeSpec | undefined
  /** The first agent starts the session. */
  readonly agents: ReadonlyArray<AgentSpec>
  readonly tasks: ReadonlyArray<TaskSpec>
  readonly groups: ReadonlyArray<GroupSpec>
  /** Tools every agent has (AgentSession.start's `tools`): their background calls belong to the session. */
  readonly sessionTools?: ReadonlyArray<ToolSpec> | undefined
  /** AgentSession.start's `userAwayTimeout` (ms). */
  readonly userAwayTimeout?: number | undefined
  /** Answers by agent or task name. */
  readonly responses: Readonly<Record<string, ResponseTable>>
  readonly timeline: ReadonlyArray<Action>
}

// ---------------------------------------------------------------------------------------------
// Compact text: one scenario on a few lines, for reproductions.

const ms = (n: number) => (n > 0 ? `${n}` : "0")

export const formatTool = (tool: ToolSpec): string => {
  const args: Array<string> = []
  if (tool.delay > 0) args.push(`${ms(tool.delay)}ms`)
  if (tool.target) args.push(`->${tool.target}`)
  if (tool.context && tool.context !== "full") args.push(tool.context)
  if (tool.plainError) args.push("plain")
  if (tool.duration !== undefined) args.push(`for ${tool.duration}ms`)
  if (tool.updates) args.push(`${tool.updates} updates`)
  if (tool.onDuplicate && tool.onDuplicate !== "allow") args.push(tool.onDuplicate)
  if (tool.speech) args.push(`${tool.awaits ? "await " : ""}${tool.speech}`)
  if (tool.shape) args.push(tool.shape)
  if (tool.timeout !== undefined) args.push(`timeout ${tool.timeout}ms`)
  return `${tool.name}:${tool.kind}${args.length ? `(${args.join(",")})` : ""}`
}

const formatHook = (name: string, hook: HookSpec | undefined) =>
  hook === undefined
    ? ""
    : ` ${name}=${hook.action}${hook.target ? `:${hook.target}` : ""}${hook.delay > 0 ? `@${hook.delay}` : ""}`

const formatAgent = (agent: AgentSpec, extra = "") =>
  `${agent.name}${extra} [${agent.tools.map(formatTool).join(" ")}]` +
  formatHook("enter", agent.onEnter) + formatHook("exit", agent.onExit) + formatHook("resume", agent.onResume) +
  (agent.turnHook ? ` turn=${agent.turnHook}` : "") + (agent.onUserAway ? ` away=${agent.onUserAway}` : "") +
  ` steps=${agent.maxToolSteps}`

export const formatResponse = (r: ResponseSpec): string => {
  const parts: Array<string> = []
  if (r.delay > 0) parts.push(`+${r.delay}`)
  if (r.text.length) parts.push(`"${r.text.join("|")}"${r.chunkDelay > 0 ? `~${r.chunkDelay}` : ""}`)
  if (r.calls.length) parts.push(r.calls.map((c) => `${c.tool}()${c.badArgs ? `!${c.badArgs}` : ""}`).join("+"))
  if (r.error) parts.push("ERROR")
  return parts.join(" ") || "(empty)"
}

export const formatAction = (a: Action): string => {
  const at = `+${a.after}`
  switch (a.op) {
    case "send":
      return `${at} send u${a.input}`
    case "run":
      return `${at} run u${a.input}${a.wait ? "" : " (no wait)"}${a.background ? " (waits for background)" : ""}`
    case "speak":
      return `${at} user speaks ${a.duration}ms`
    case "voice":
      return `${at} user says u${a.input} (audio)`
    case "utter":
      return `${at} user says u${a.input} (${a.duration}ms, cascade${a.stops ? ", then the line stops" : ""})`
    case "noise":
      return `${at} noise ${a.duration}ms`
    case "handoff":
      return `${at} handoff ${a.target}`
    default:
      return `${at} ${a.op}`
  }
}

export const format = (s: Scenario): string => {
  const lines: Array<string> = [`seed ${s.seed}`]
  s.agents.forEach((a, i) => lines.push(`  agent ${formatAgent(a, i === 0 ? "*" : "")}`))
  for (const t of s.tasks) lines.push(`  task  ${formatAgent(t)} context=${t.context}`)
  for (const g of s.groups) lines.push(`  group ${g.name} = ${g.tasks.join(", ")}`)
  if (s.userAwayTimeout !== undefined) lines.push(`  userAwayTimeout ${s.userAwayTimeout}ms`)
  if (s.sessionTools?.length) lines.push(`  session tools [${s.sessionTools.map(formatTool).join(" ")}]`)
  if (s.realtime) {
    const r = s.realtime
    lines.push(`  realtime ${r.capabilities} ack=${r.ackDelay}ms response=${r.responseDelay}ms${r.rejectEvery ? ` reject every ${r.rejectEvery}th update` : ""}${
      r.transcriptMs !== undefined ? ` transcript +${r.transcriptMs}ms` : ""
    }${r.untranscribedEvery ? ` untranscribed every ${r.untranscribedEvery}th input` : ""}${
      r.dropEvery ? ` connection drops in every ${r.dropEvery}th response` : ""
    }${r.failEvery ? ` every ${r.failEvery}th response fails` : ""}${r.stallEvery ? ` every ${r.stallEvery}th request hangs` : ""}`)
  }
  if (s.cascade) {
    const c = s.cascade
    lines.push(
      `  cascade endpointing=${c.endpointingMs}ms interruption=${c.interruptionMs}ms stt=${c.sttDelay}ms${c.sttFailEvery ? ` (fails every ${c.sttFailEvery})` : ""}${
        c.sttDropEvery ? ` (drops every ${c.sttDropEvery})` : ""
      }` +
        ` tts=${c.ttsDelay}ms ${c.msPerChar}ms/char${c.ttsFailEvery ? ` (fails every ${c.ttsFailEvery})` : ""}${c.interims ? " interims" : ""}` +
        `${c.maxEndpointingMs !== undefined ? ` maxEndpointing=${c.maxEndpointingMs}ms` : ""}${c.trailingEvery ? ` (every ${c.trailingEvery}th input trails off)` : ""}` +
        `${c.preemptive ? " preemptive" : ""}${c.minInterruptionWords ? ` minInterruptionWords=${c.minInterruptionWords}` : ""}` +
        `${c.resumeFalseInterruption === false ? " no-resume" : ""}${c.falseInterruptionTimeoutMs !== undefined ? ` falseInterruptionTimeout=${c.falseInterruptionTimeoutMs}ms` : ""}`
    )
  }
  for (const [name, table] of Object.entries(s.responses)) {
    for (const trigger of ["user", "tool", "other"] as const) {
      const list = table[trigger]
      if (list.length) lines.push(`  model ${name}.${trigger}: ${list.map(formatResponse).join(" ; ")}`)
    }
  }
  lines.push(`  timeline: ${s.timeline.map(formatAction).join(" | ")}`)
  return lines.join("\n")
}

const hookSize = (h: HookSpec | undefined) => (h ? 1 + (h.action !== "none" ? 1 : 0) + (h.delay > 0 ? 1 : 0) : 0)

const agentSize = (a: AgentSpec) =>
  10 + a.tools.reduce((n, t) => n + 3 + (t.delay > 0 ? 1 : 0) + (t.duration ? 1 : 0) + (t.updates ?? 0), 0) + hookSize(a.onEnter) + hookSize(a.onExit) + hookSize(a.onResume)

const responseSize = (r: ResponseSpec) =>
  1 + r.calls.length + r.text.length + (r.delay > 0 ? 1 : 0) + (r.chunkDelay > 0 ? 1 : 0) + (r.error ? 1 : 0)

/** The size the shrinker minimises: every part and every non-zero delay counts. */
export const size = (s: Scenario): number =>
  [...s.agents, ...s.tasks].reduce((n, a) => n + agentSize(a), 0) + s.groups.length * 5 + (s.sessionTools?.length ?? 0) * 3 +
  (s.cascade ? 3 + (s.cascade.sttFailEvery ? 1 : 0) + (s.cascade.sttDropEvery ? 1 : 0) + (s.cascade.ttsFailEvery ? 1 : 0) + (s.cascade.ttsDelay > 0 ? 1 : 0) + (s.cascade.sttDelay > 0 ? 1 : 0) : 0) +
  (s.realtime ? 3 + (s.realtime.ackDelay > 0 ? 1 : 0) + (s.realtime.responseDelay > 0 ? 1 : 0) + (s.realtime.rejectEvery ? 1 : 0) + (s.realtime.transcriptMs !== undefined ? 1 : 0) + (s.realtime.untranscribedEvery ? 1 : 0) +
      (s.realtime.dropEvery ? 1 : 0) + (s.realtime.failEvery ? 1 : 0) + (s.realtime.stallEvery ? 1 : 0) : 0) +
  s.timeline.reduce((n, a) => n + 4 + (a.after > 0 ? 1 : 0), 0) +
  Object.values(s.responses).reduce((n, t) => n + [...t.user, ...t.tool, ...t.other].reduce((m, r) => m + responseSize(r), 0), 0)
