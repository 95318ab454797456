/**
 * Recorded frames, matchers, faults and triggers shared by both mocks.
 *
 * A *fault* changes how the server answers one client event (late, never, with an error, or by
 * closing the socket). A *trigger* runs protocol actions when a client event is handled or when the
 * server sends a given event, which is how a test injects something "at a point of the script".
 */

export interface RecordedFrame {
  /** Position in this connection's list for that direction, from 0. */
  readonly seq: number
  readonly direction: "in" | "out"
  /** Milliseconds since the connection opened (live clock). */
  readonly atMs: number
  readonly binary: boolean
  readonly bytes: number
  /** The frame as UTF-8 text (binary frames are decoded too). */
  readonly text: string
  /** Parsed JSON, or `undefined` if the frame was not valid JSON. */
  readonly json: unknown
  /**
   * Protocol event type: OpenAI `type`; Gemini the top-level key, refined for some messages
   * (`realtimeInput.audio`, `serverContent.turnComplete`, ...). `undefined` when unparseable.
   */
  readonly type: string | undefined
  /** `true` for frames injected as noise (unknown or malformed). */
  readonly noise: boolean
}

/**
 * Matches an event by type (exactly, or as a dotted prefix: `"conversation.item"` matches
 * `"conversation.item.create"`) or by predicate.
 */
export type Matcher<E> = string | ((event: E, type: string) => boolean)

export const typeMatches = (pattern: string, type: string): boolean =>
  type === pattern || type.startsWith(`${pattern}.`)

export const matches = <E>(matcher: Matcher<E>, event: E, type: string): boolean =>
  typeof matcher === "string" ? typeMatches(matcher, type) : matcher(event, type)

/** Matches a recorded frame by type (as above) or by predicate. */
export type FrameMatcher = string | ((frame: RecordedFrame) => boolean)

export const frameMatches = (matcher: FrameMatcher, frame: RecordedFrame): boolean =>
  typeof matcher === "string" ? frame.type !== undefined && typeMatches(matcher, frame.type) : matcher(frame)

/**
 * How the server answers a matching client event. `times` defaults to unlimited.
 *
 * - `delayAck`: the event is processed (state change *and* answer) `delayMs` late. By default later
 *   events are not held back, so their answers overtake it (a late ack); `ordered: true` holds the
 *   whole inbound queue instead (a slow server).
 * - `dropAck`: the event is swallowed: no state change, no answer (a half-open server).
 * - `reject`: answered with a protocol error instead of being applied (OpenAI: an `error` event;
 *   Gemini: a close frame).
 * - `closeOn`: the server closes the socket instead of answering (`abrupt`: TCP drop, no close frame).
 */
export type Fault<E, R> =
  | {
    readonly kind: "delayAck"
    readonly match: Matcher<E>
    readonly delayMs: number
    readonly ordered?: boolean
    readonly times?: number
  }
  | { readonly kind: "dropAck"; readonly match: Matcher<E>; readonly times?: number }
  | { readonly kind: "reject"; readonly match: Matcher<E>; readonly with: R; readonly times?: number }
  | {
    readonly kind: "closeOn"
    readonly match: Matcher<E>
    readonly code?: number
    readonly reason?: string
    readonly abrupt?: boolean
    readonly times?: number
  }

/**
 * Runs `action` when a client event matching `on` has been handled, or when the server has sent an
 * event matching `onSent` (exactly one of the two). `times` defaults to 1.
 */
export interface Trigger<E, A> {
  readonly on?: Matcher<E>
  readonly onSent?: FrameMatcher
  readonly delayMs?: number
  readonly times?: number
  readonly action: A | ReadonlyArray<A>
}

/** Periodic noise injected after every n-th server event. */
export interface NoiseOptions {
  readonly unknownEvery?: number
  readonly malformedEvery?: number
  readonly malformedKind?: MalformedKind
}

export type MalformedKind = "invalid-json" | "not-object" | "missing-type" | "binary-garbage"

/** A list of rules with use counts. */
export class RuleList<T extends { readonly times?: number }> {
  private readonly rules: Array<{ rule: T; left: number }> = []
  private readonly defaultTimes: number

  constructor(initial: ReadonlyArray<T> = [], defaultTimes = Number.POSITIVE_INFINITY) {
    this.defaultTimes = defaultTimes
    for (const r of initial) this.add(r)
  }

  add(rule: T): void {
    this.rules.push({ rule, left: rule.times ?? this.defaultTimes })
  }

  clear(): void {
    this.rules.length = 0
  }

  /** The first rule accepted by `pred`, consuming one use. */
  takeFirst(pred: (rule: T) => boolean): T | undefined {
    const entry = this.rules.find((e) => e.left > 0 && pred(e.rule))
    if (entry === undefined) return undefined
    entry.left--
    return entry.rule
  }

  /** Every rule accepted by `pred`, consuming one use of each. */
  takeAll(pred: (rule: T) => boolean): Array<T> {
    const out: Array<T> = []
    for (const e of this.rules) {
      if (e.left > 0 && pred(e.rule)) {
        e.left--
        out.push(e.rule)
      }
    }
    return out
  }
}
