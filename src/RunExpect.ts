/**
 * Expectations on a run's events (`RunResult.expect`): a cursor over them (`RunExpect`), the
 * assertions on one event (`EventAssert`), what each one matches, and `judge`, which asks a
 * model whether a message meets an intent (see `Judge`). A failed expectation throws an
 * `ExpectationError` whose message lists every event of the run, with a marker where the
 * expectation stopped.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect } from "effect"
import * as Judge from "./Judge.ts"
import type { RunEvent } from "./RunResult.ts"

/**
 * Text to match: equal to a string, or matching a regular expression.
 *
 * @since 0.1.0
 * @category models
 */
export type Text = string | RegExp

/**
 * A `RunResult.expect` assertion failed; the message lists the run's events.
 *
 * @since 0.1.0
 * @category errors
 */
export class ExpectationError extends Error {
  override readonly name = "ExpectationError"
}
const clip = (text: string, max = 80) => (text.length > max ? `${text.slice(0, max)}…` : text)

/**
 * One line for `event`, as a failed expectation prints it.
 *
 * @since 0.1.0
 * @category utils
 */
export const describeEvent = (event: RunEvent): string => {
  switch (event.type) {
    case "message":
      return `message          ${event.role.padEnd(9)} ${event.agent ?? "-"}: ${JSON.stringify(clip(event.content))}${
        event.interrupted ? " (interrupted)" : ""
      }`
    case "function_call":
      return `function_call    ${event.agent ?? "-"}: ${event.name}(${clip(event.rawArguments)})`
    case "function_call_output":
      return `function_output  ${event.agent ?? "-"}: ${event.name} -> ${JSON.stringify(clip(event.output))} [${event.status}]`
    case "agent_handoff":
      return `agent_handoff    ${event.from ?? "-"} -> ${event.to} (${event.kind}${event.resumed ? ", resumed" : ""})`
  }
}
const matches = (actual: string, expected: Text | undefined) =>
  expected === undefined || (typeof expected === "string" ? actual.includes(expected) : expected.test(actual))

/** Deep partial match: every key of `expected` is present in `actual` with a matching value. */
const partialMatch = (actual: unknown, expected: unknown): boolean => {
  if (expected instanceof RegExp) return typeof actual === "string" && expected.test(actual)
  if (typeof expected !== "object" || expected === null) return Object.is(actual, expected)
  if (typeof actual !== "object" || actual === null) return false
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && expected.length === actual.length && expected.every((e, i) => partialMatch(actual[i], e))
  }
  return Object.entries(expected).every(([key, value]) => partialMatch((actual as Record<string, unknown>)[key], value))
}

/**
 * What `expect` matches in a message event; every given field must match.
 *
 * @since 0.1.0
 * @category models
 */
export interface MessageMatch {
  readonly role?: "system" | "developer" | "user" | "assistant"
  readonly content?: Text
  readonly agent?: string
}
/**
 * What `expect` matches in a function call event; `arguments` is a partial object.
 *
 * @since 0.1.0
 * @category models
 */
export interface FunctionCallMatch {
  readonly name?: string
  /** A partial object: each given key must match. */
  readonly arguments?: Record<string, unknown>
  readonly agent?: string
}
/**
 * What `expect` matches in a function call output event.
 *
 * @since 0.1.0
 * @category models
 */
export interface FunctionCallOutputMatch {
  readonly name?: string
  readonly output?: Text
  readonly isError?: boolean
  readonly status?: string
  readonly agent?: string
}
/**
 * What `expect` matches in a handoff event.
 *
 * @since 0.1.0
 * @category models
 */
export interface HandoffMatch {
  readonly to?: string
  readonly from?: string
  readonly kind?: string
  readonly resumed?: boolean
}

type Of<T extends RunEvent["type"]> = Extract<RunEvent, { readonly type: T }>

/**
 * A message event an expectation found, with `judge`: ask a model whether the message meets an
 * intent (see `Judge`). It succeeds with the message on a `pass` verdict and fails with
 * `Judge.JudgeFailed` (verdict, reason, the message judged and the run's events) on `fail`, or
 * `Judge.JudgeError` when the model gives no verdict.
 *
 * @example
 * ```ts
 * const result = yield* session.run("Hi, I want to change my order")
 * result.expect.nextEvent().isMessage({ role: "user" })
 * yield* result.expect.nextEvent().isMessage({ role: "assistant" })
 *   .judge(judgeModel, { intent: "asks for the order number" })
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export type MessageAssert = Of<"message"> & {
  readonly judge: <E = never, R = never>(
    model: Judge.JudgeModel<E, R>,
    options: Judge.JudgeOptions
  ) => Effect.Effect<Of<"message">, Judge.JudgeFailed | Judge.JudgeError | E, R>
}

/** The conversation before event `index`, as the judge reads it. */
const before = (events: ReadonlyArray<RunEvent>, index: number): Array<string> =>
  events.slice(0, Math.max(0, index)).flatMap((e) => {
    switch (e.type) {
      case "message":
        return e.role === "user" || e.role === "assistant" ? [`${e.role}${e.agent ? ` (${e.agent})` : ""}: ${e.content}`] : []
      case "function_call":
        return [`tool call ${e.name}(${clip(e.rawArguments, 200)})`]
      case "function_call_output":
        return [`tool output ${e.name}: ${clip(e.output, 200)}`]
      case "agent_handoff":
        return [`handoff ${e.from ?? "-"} -> ${e.to}`]
    }
  })

const messageAssert = (run: RunExpect, event: Of<"message">, index: number): MessageAssert => ({
  ...event,
  judge: (model, options) => {
    const judged: Judge.Judged = { text: event.content, before: before(run.events, index), listing: run.listing(index) }
    return Effect.as(Judge.judge(model, judged, options), event)
  }
})

const predicates = {
  message: (m: MessageMatch) => (e: RunEvent): e is Of<"message"> =>
    e.type === "message" && (m.role === undefined || e.role === m.role) && matches(e.content, m.content) &&
    (m.agent === undefined || e.agent === m.agent),
  functionCall: (m: FunctionCallMatch) => (e: RunEvent): e is Of<"function_call"> =>
    e.type === "function_call" && (m.name === undefined || e.name === m.name) &&
    (m.arguments === undefined || partialMatch(e.arguments, m.arguments)) && (m.agent === undefined || e.agent === m.agent),
  functionCallOutput: (m: FunctionCallOutputMatch) => (e: RunEvent): e is Of<"function_call_output"> =>
    e.type === "function_call_output" && (m.name === undefined || e.name === m.name) && matches(e.output, m.output) &&
    (m.isError === undefined || e.isError === m.isError) && (m.status === undefined || e.status === m.status) &&
    (m.agent === undefined || e.agent === m.agent),
  handoff: (m: HandoffMatch) => (e: RunEvent): e is Of<"agent_handoff"> =>
    e.type === "agent_handoff" && (m.to === undefined || e.to === m.to) && (m.from === undefined || e.from === m.from) &&
    (m.kind === undefined || e.kind === m.kind) && (m.resumed === undefined || e.resumed === m.resumed)
}

/**
 * Assertions on one event.
 *
 * @since 0.1.0
 * @category models
 */
export class EventAssert {
  private readonly run: RunExpect
  readonly event: RunEvent | undefined
  private readonly index: number
  constructor(run: RunExpect, event: RunEvent | undefined, index: number) {
    this.run = run
    this.event = event
    this.index = index
  }
  private check<E extends RunEvent>(what: string, predicate: (e: RunEvent) => e is E): E {
    if (this.event && predicate(this.event)) return this.event
    return this.run.fail(`Expected event ${this.index} to be ${what}`, this.index)
  }
  /** The event is a message matching `match`; `judge` on the result asks a model about it. */
  isMessage(match: MessageMatch = {}): MessageAssert {
    return messageAssert(this.run, this.check(`a message ${describeMatch(match)}`, predicates.message(match)), this.index)
  }
  isFunctionCall(match: FunctionCallMatch = {}): Of<"function_call"> {
    return this.check(`a function call ${JSON.stringify(match)}`, predicates.functionCall(match))
  }
  isFunctionCallOutput(match: FunctionCallOutputMatch = {}): Of<"function_call_output"> {
    return this.check(`a function call output ${describeMatch(match)}`, predicates.functionCallOutput(match))
  }
  isAgentHandoff(match: HandoffMatch = {}): Of<"agent_handoff"> {
    return this.check(`an agent handoff ${JSON.stringify(match)}`, predicates.handoff(match))
  }
}

const describeMatch = (match: object) =>
  JSON.stringify(match, (_, v) => (v instanceof RegExp ? v.toString() : v))

/**
 * A cursor over the run's events, in the spirit of LiveKit's `RunResult.expect`.
 *
 * @since 0.1.0
 * @category models
 */
export class RunExpect {
  private cursor = 0
  readonly events: ReadonlyArray<RunEvent>
  constructor(events: ReadonlyArray<RunEvent>) {
    this.events = events
  }

  /** The event at the cursor; moves the cursor past it. */
  nextEvent(): EventAssert {
    const index = this.cursor
    if (index >= this.events.length) this.fail("Expected another event, but there are no more", index)
    this.cursor++
    return new EventAssert(this, this.events[index], index)
  }

  skipNext(count = 1): this {
    if (this.cursor + count > this.events.length) {
      this.fail(`Cannot skip ${count} event(s): only ${this.events.length - this.cursor} left`, this.cursor)
    }
    this.cursor += count
    return this
  }

  /** The event at `index` (negative counts from the end), without moving the cursor. */
  at(index: number): EventAssert {
    const i = index < 0 ? this.events.length + index : index
    if (i < 0 || i >= this.events.length) this.fail(`There is no event ${index}`, this.cursor)
    return new EventAssert(this, this.events[i], i)
  }

  /** The first message matching `match`; `judge` on the result asks a model about it. */
  containsMessage(match: MessageMatch = {}): MessageAssert {
    const found = this.find(`a message ${describeMatch(match)}`, predicates.message(match))
    return messageAssert(this, found, this.events.indexOf(found))
  }
  containsFunctionCall(match: FunctionCallMatch = {}): Of<"function_call"> {
    return this.find(`a function call ${JSON.stringify(match)}`, predicates.functionCall(match))
  }
  containsFunctionCallOutput(match: FunctionCallOutputMatch = {}): Of<"function_call_output"> {
    return this.find(`a function call output ${describeMatch(match)}`, predicates.functionCallOutput(match))
  }
  containsAgentHandoff(match: HandoffMatch = {}): Of<"agent_handoff"> {
    return this.find(`an agent handoff ${JSON.stringify(match)}`, predicates.handoff(match))
  }
  /** Asserts that no event matches. */
  lacks(what: string, predicate: (e: RunEvent) => boolean): void {
    const index = this.events.findIndex(predicate)
    if (index >= 0) this.fail(`Expected no ${what}`, index)
  }

  noMoreEvents(): void {
    if (this.cursor < this.events.length) this.fail("Expected no more events", this.cursor)
  }

  private find<E extends RunEvent>(what: string, predicate: (e: RunEvent) => e is E): E {
    const found = this.events.find(predicate)
    if (found) return found
    return this.fail(`Expected the run to contain ${what}`, -1)
  }

  /** Throws an `ExpectationError` that lists the run's events. */
  fail(message: string, at: number): never {
    throw new ExpectationError(`${message}.\n${this.listing(at)}`)
  }

  /** The run's events, one per line, with a marker at event `at`. */
  listing(at: number): string {
    const lines = this.events.map((event, i) => `${i === at ? ">" : " "} ${String(i).padStart(2)}  ${describeEvent(event)}`)
    return `Events of the run (${this.events.length}):\n${lines.length ? lines.join("\n") : "  (none)"}`
  }
}
