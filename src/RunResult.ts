/**
 * The result of `session.run(input)`: the conversation items added from that input until the
 * session was quiescent again (the whole cascade of handoffs, tasks and their replies), and an
 * expect API to assert on them (its cursor, matches and `judge` are in `RunExpect.ts`, re-exported
 * here). A failed expectation throws an `ExpectationError` whose message lists every event of the
 * run, with a marker where the expectation stopped.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import type { ChatItem } from "./ChatContext.ts"
import type { ErrorEvent, SessionEvent } from "./Events.ts"
import * as Timeline from "./Timeline.ts"
import { describeEvent, RunExpect } from "./RunExpect.ts"

export {
  describeEvent,
  EventAssert,
  ExpectationError,
  type FunctionCallMatch,
  type FunctionCallOutputMatch,
  type HandoffMatch,
  type MessageAssert,
  type MessageMatch,
  RunExpect,
  type Text
} from "./RunExpect.ts"

/**
 * One event of a run as tests see it: a message, a function call, its output, or a handoff, with
 * the chat item it came from.
 *
 * @since 0.1.0
 * @category models
 */
export type RunEvent =
  | {
    readonly type: "message"
    readonly role: "system" | "developer" | "user" | "assistant"
    readonly content: string
    readonly interrupted: boolean
    readonly agent: string | undefined
    readonly item: ChatItem
  }
  | {
    readonly type: "function_call"
    readonly name: string
    readonly arguments: unknown
    readonly rawArguments: string
    readonly callId: string
    readonly agent: string | undefined
    readonly item: ChatItem
  }
  | {
    readonly type: "function_call_output"
    readonly name: string
    readonly output: string
    readonly isError: boolean
    readonly status: string
    readonly callId: string
    readonly agent: string | undefined
    readonly item: ChatItem
  }
  | {
    readonly type: "agent_handoff"
    readonly from: string | undefined
    readonly to: string
    readonly kind: string
    readonly resumed: boolean
    readonly item: ChatItem
  }
const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/**
 * The run event of a session event, for the events that add a chat item; `undefined` for the
 * others.
 *
 * @since 0.1.0
 * @category utils
 */
export const toRunEvent = (event: SessionEvent): RunEvent | undefined => {
  if (event.type !== "conversation_item_added") return undefined
  const item = event.item
  switch (item._tag) {
    case "Message":
      return { type: "message", role: item.role, content: item.text, interrupted: item.interrupted, agent: item.agent, item }
    case "FunctionCall":
      return {
        type: "function_call",
        name: item.name,
        arguments: parse(item.arguments),
        rawArguments: item.arguments,
        callId: item.callId,
        agent: item.agent,
        item
      }
    case "FunctionCallOutput":
      return {
        type: "function_call_output",
        name: item.name,
        output: item.output,
        isError: item.isError,
        status: item.status,
        callId: item.callId,
        agent: item.agent,
        item
      }
    case "AgentHandoff":
      return { type: "agent_handoff", from: item.from, to: item.to, kind: item.kind, resumed: item.resumed, item }
  }
}
/**
 * The result of `session.run`: the items the turn added (messages, calls, outputs, handoffs) in
 * order, every session event since the input, a cursor of expectations over them (`expect`), and
 * the turn's errors. `toString()` prints them and `timeline()` draws them.
 *
 * @since 0.1.0
 * @category models
 */
export class RunResult {
  readonly events: ReadonlyArray<RunEvent>
  /** The cursor over the events (one per result: `nextEvent` calls move through them). */
  readonly expect: RunExpect
  /** Every session event since the input, including speech and state events. */
  readonly sessionEvents: ReadonlyArray<SessionEvent>
  constructor(sessionEvents: ReadonlyArray<SessionEvent>) {
    this.sessionEvents = sessionEvents
    const events: Array<RunEvent> = []
    for (const event of sessionEvents) {
      const run = toRunEvent(event)
      if (!run) continue
      // In the history's order: an item placed before one recorded earlier (a spoken turn
      // transcribed after its answer) comes before it here too.
      const before = event.type === "conversation_item_added" && event.before !== undefined
        ? events.findIndex((e) => e.item.id === event.before)
        : -1
      if (before < 0) events.push(run)
      else events.splice(before, 0, run)
    }
    this.events = events
    this.expect = new RunExpect(this.events)
  }
  /** The `error` events of the run (model, tool, hook, input, realtime). */
  get errors(): ReadonlyArray<ErrorEvent> {
    return this.sessionEvents.filter((e): e is ErrorEvent => e.type === "error")
  }
  /**
   * Whether the turn got no answer because a model failed: a model or realtime error, and no
   * reply and no handoff in the run. `session.run` fails with `TurnFailed` then.
   */
  get unanswered(): boolean {
    return this.errors.some((e) => e.source === "model" || e.source === "realtime") &&
      !this.events.some((e) => (e.type === "message" && e.role === "assistant" && e.content !== "") || e.type === "agent_handoff")
  }
  /** The last assistant message of the run, if any. */
  get finalOutput(): string | undefined {
    for (let i = this.events.length - 1; i >= 0; i--) {
      const event = this.events[i]!
      if (event.type === "message" && event.role === "assistant") return event.content
    }
    return undefined
  }
  /** The run drawn as an SVG timeline (lanes per agent, the floor, speeches, tools, times). */
  timeline(options?: Timeline.Options): string {
    return Timeline.fromEvents(this.sessionEvents, options)
  }
  /** A readable listing of the events, for logs. */
  toString(): string {
    return this.events.map((event, i) => `${String(i).padStart(2)}  ${describeEvent(event)}`).join("\n")
  }
}
