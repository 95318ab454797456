/**
 * The chat context: the ordered items an agent's model sees, and the session's shared history.
 *
 * A `ChatContext` is an immutable value. Actors own theirs and replace it as the conversation
 * grows; the session keeps one more for the whole conversation (every agent's items plus the
 * handoff records). What a context becomes in a model's prompt is `ChatPrompt.toPrompt`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */

/**
 * Who a message is from: the instructions (`system`, `developer`), the user or an agent
 * (`assistant`).
 *
 * @since 0.1.0
 * @category models
 */
export type Role = "system" | "developer" | "user" | "assistant"

/**
 * How a function call ended. Every call in a context gets exactly one output (rule 4).
 *
 * @since 0.1.0
 * @category models
 */
export type OutputStatus = "ok" | "error" | "cancelled" | "interrupted" | "handoff" | "progress"

/**
 * A message in the conversation: instructions, user text or an agent's words (with `interrupted`
 * when a reply was cut short and `text` is what was delivered).
 *
 * @since 0.1.0
 * @category models
 */
export interface Message {
  readonly _tag: "Message"
  readonly id: string
  readonly role: Role
  readonly text: string
  /** The reply was cut short; `text` is what was delivered before the interruption. */
  readonly interrupted: boolean
  /** Name of the agent that produced or received it. */
  readonly agent?: string | undefined
}

/**
 * A tool call the model made, with its arguments as the model sent them.
 *
 * @since 0.1.0
 * @category models
 */
export interface FunctionCall {
  readonly _tag: "FunctionCall"
  readonly id: string
  readonly callId: string
  readonly name: string
  /** The arguments as the model sent them (a JSON text, possibly invalid). */
  readonly arguments: string
  readonly agent?: string | undefined
}

/**
 * The output recorded for a function call (matched by `callId`), with how the call ended.
 *
 * @since 0.1.0
 * @category models
 */
export interface FunctionCallOutput {
  readonly _tag: "FunctionCallOutput"
  readonly id: string
  readonly callId: string
  readonly name: string
  readonly output: string
  readonly isError: boolean
  readonly status: OutputStatus
  readonly agent?: string | undefined
}

/**
 * How the floor moved to an agent: the session's `start`, a `handoff`, a `task` lent the floor, a
 * `return` from a task; or between an agent and a person (`Human`): a `take_over` (to the
 * person) and a `hand_back` (to an agent).
 *
 * @since 0.1.0
 * @category models
 */
export type HandoffKind = "start" | "handoff" | "task" | "return" | "take_over" | "hand_back"

/**
 * A record in the history that the floor moved from one agent to another.
 *
 * @since 0.1.0
 * @category models
 */
export interface AgentHandoff {
  readonly _tag: "AgentHandoff"
  readonly id: string
  readonly from?: string | undefined
  readonly to: string
  readonly kind: HandoffKind
  /** True when the target's actor already existed and was resumed with its state. */
  readonly resumed: boolean
  readonly reason?: string | undefined
}

/**
 * One item of a chat context: a message, a function call, its output or a handoff record.
 *
 * @since 0.1.0
 * @category models
 */
export type ChatItem = Message | FunctionCall | FunctionCallOutput | AgentHandoff

let counter = 0
/**
 * Process-unique ids for chat items.
 *
 * @since 0.1.0
 * @category utils
 */
export const nextId = (prefix: string): string => `${prefix}_${(++counter).toString(36)}`

/**
 * Ids `nextId` must not give again: those of items a resumed session brings from an earlier
 * process (whose counter started where this one's did).
 *
 * @since 0.1.0
 * @category utils
 */
export const reserveIds = (ids: Iterable<string>): void => {
  for (const id of ids) {
    const n = parseInt(id.slice(id.lastIndexOf("_") + 1), 36)
    if (Number.isSafeInteger(n) && n > counter) counter = n
  }
}

/**
 * Makes a `Message` item (a fresh id unless given). Use it to seed a context or in tests.
 *
 * @since 0.1.0
 * @category constructors
 */
export const message = (
  role: Role,
  text: string,
  options: { readonly interrupted?: boolean; readonly agent?: string | undefined; readonly id?: string } = {}
): Message => ({
  _tag: "Message",
  id: options.id ?? nextId("msg"),
  role,
  text,
  interrupted: options.interrupted ?? false,
  agent: options.agent
})

/**
 * Makes a `FunctionCall` item (a fresh id unless given).
 *
 * @since 0.1.0
 * @category constructors
 */
export const functionCall = (
  fields: {
    readonly callId: string
    readonly name: string
    readonly arguments: string
    readonly agent?: string | undefined
    readonly id?: string | undefined
  }
): FunctionCall => ({
  _tag: "FunctionCall",
  id: fields.id ?? nextId("fc"),
  callId: fields.callId,
  name: fields.name,
  arguments: fields.arguments,
  agent: fields.agent
})

/**
 * Makes a `FunctionCallOutput` item for the call with `callId` (a fresh id).
 *
 * @since 0.1.0
 * @category constructors
 */
export const functionCallOutput = (
  fields: {
    readonly callId: string
    readonly name: string
    readonly output: string
    readonly isError: boolean
    readonly status: OutputStatus
    readonly agent?: string | undefined
  }
): FunctionCallOutput => ({ _tag: "FunctionCallOutput", id: nextId("fco"), ...fields })

/**
 * Makes an `AgentHandoff` record (a fresh id).
 *
 * @since 0.1.0
 * @category constructors
 */
export const agentHandoff = (
  fields: {
    readonly from?: string | undefined
    readonly to: string
    readonly kind: HandoffKind
    readonly resumed: boolean
    readonly reason?: string | undefined
  }
): AgentHandoff => ({ _tag: "AgentHandoff", id: nextId("handoff"), ...fields })

/**
 * What `ChatContext.copy` leaves out: function calls and their outputs, instructions, handoff
 * records.
 *
 * @since 0.1.0
 * @category models
 */
export interface CopyOptions {
  readonly excludeFunctionCalls?: boolean
  readonly excludeInstructions?: boolean
  readonly excludeHandoffs?: boolean
}

const isInstruction = (item: ChatItem) =>
  item._tag === "Message" && (item.role === "system" || item.role === "developer")

const isFunctionItem = (item: ChatItem) => item._tag === "FunctionCall" || item._tag === "FunctionCallOutput"

const keep = (options: CopyOptions) => (item: ChatItem) =>
  !(options.excludeFunctionCalls && isFunctionItem(item)) &&
  !(options.excludeInstructions && isInstruction(item)) &&
  !(options.excludeHandoffs && item._tag === "AgentHandoff")

/**
 * An immutable, ordered list of chat items: what an agent's model sees, or the session's shared
 * history. Build one with `ChatContext.make` or start from `ChatContext.empty`; each change (add,
 * insert, copy, truncate) returns a new context.
 *
 * @since 0.1.0
 * @category models
 */
export class ChatContext {
  static readonly empty = new ChatContext([], 0)
  static make(items: Iterable<ChatItem>): ChatContext {
    const buffer = [...items]
    return new ChatContext(buffer, buffer.length)
  }

  /**
   * Items live in a buffer shared along a chain of appends: `append` pushes onto it when this
   * context is the buffer's newest (nothing was appended after it), and copies otherwise. A
   * context only ever reads its first `length` items, so it stays immutable, and a turn's append
   * costs the same in a session of 10 items and of 10,000.
   */
  readonly #buffer: Array<ChatItem>
  readonly length: number
  #items: ReadonlyArray<ChatItem> | undefined

  private constructor(buffer: Array<ChatItem>, length: number) {
    this.#buffer = buffer
    this.length = length
  }

  /** The items, in order (an array made on first use and kept). */
  get items(): ReadonlyArray<ChatItem> {
    return this.#items ??= this.#buffer.slice(0, this.length)
  }

  /** The item at `index` (negative counts from the end), without making `items`. */
  at(index: number): ChatItem | undefined {
    const i = index < 0 ? this.length + index : index
    return i >= 0 && i < this.length ? this.#buffer[i] : undefined
  }

  *[Symbol.iterator](): Iterator<ChatItem> {
    for (let i = 0; i < this.length; i++) yield this.#buffer[i]!
  }

  append(...items: ReadonlyArray<ChatItem>): ChatContext {
    if (items.length === 0) return this
    // (never onto an empty context's buffer: `empty` is shared by every session)
    if (this.length > 0 && this.#buffer.length === this.length) {
      this.#buffer.push(...items)
      return new ChatContext(this.#buffer, this.length + items.length)
    }
    const buffer = this.#buffer.slice(0, this.length)
    buffer.push(...items)
    return new ChatContext(buffer, buffer.length)
  }

  has(id: string): boolean {
    for (let i = this.length - 1; i >= 0; i--) if (this.#buffer[i]!.id === id) return true
    return false
  }

  /** The id of the first item (in this context's order) whose id is one of `ids`, if any. */
  firstOf(ids: Iterable<string>): string | undefined {
    const wanted = new Set(ids)
    if (wanted.size === 0) return undefined
    for (let i = 0; i < this.length; i++) if (wanted.has(this.#buffer[i]!.id)) return this.#buffer[i]!.id
    return undefined
  }

  /**
   * `item` placed before the item with id `before` (a turn whose record came after what
   * answered it, such as a transcript that arrives after the realtime answer to its turn); at
   * the end, as `append`, when `before` is undefined or not in this context.
   */
  insertBefore(item: ChatItem, before: string | undefined): ChatContext {
    const index = before === undefined ? -1 : this.items.findIndex((i) => i.id === before)
    if (index < 0) return this.append(item)
    const buffer = this.#buffer.slice(0, this.length)
    buffer.splice(index, 0, item)
    return new ChatContext(buffer, buffer.length)
  }

  /** @internal The shared buffer and this context's length, for `toPrompt`'s prefix cache. */
  static view(context: ChatContext): { readonly buffer: ReadonlyArray<ChatItem>; readonly length: number } {
    return { buffer: context.#buffer, length: context.length }
  }

  /**
   * The context without the kinds of items the options exclude. When none is excluded this is
   * the context itself: it is immutable, an append to either side later copies the buffer when
   * the other has grown it, and a handoff's new agent then reuses the prompt already converted
   * for the old one (a handoff in a long session costs no copy of its history).
   */
  copy(options: CopyOptions = {}): ChatContext {
    const kept = keep(options)
    const buffer = this.#buffer
    let first = 0
    while (first < this.length && kept(buffer[first]!)) first++
    if (first === this.length) return this
    const items = buffer.slice(0, first)
    for (let i = first + 1; i < this.length; i++) if (kept(buffer[i]!)) items.push(buffer[i]!)
    return new ChatContext(items, items.length)
  }

  /**
   * The last `turns` turns, where a turn starts at a user message. Leading instructions are
   * kept, and a function call is never separated from its output.
   */
  truncate(turns: number): ChatContext {
    if (turns <= 0) return ChatContext.make(this.items.filter(isInstruction))
    let seen = 0
    let start = 0
    for (let i = this.items.length - 1; i >= 0; i--) {
      const item = this.items[i]!
      if (item._tag === "Message" && item.role === "user" && ++seen === turns) {
        start = i
        break
      }
    }
    if (seen < turns) return this
    const head = this.items.slice(0, start).filter(isInstruction)
    return ChatContext.make([...head, ...this.items.slice(start)])
  }

  /** Appends the items of `other` that this context does not have yet, in `other`'s order. */
  merge(other: ChatContext, options: CopyOptions = {}): ChatContext {
    const ids = new Set(this.items.map((item) => item.id))
    const added = other.items.filter((item) => !ids.has(item.id) && keep(options)(item))
    return this.append(...added)
  }

  /** Items added after the item with the given id (all items if the id is absent). */
  since(id: string | undefined): ReadonlyArray<ChatItem> {
    if (id === undefined) return this.items
    const index = this.items.findIndex((item) => item.id === id)
    return index < 0 ? this.items : this.items.slice(index + 1)
  }

  /** Function calls that have no output yet. */
  pendingCalls(): ReadonlyArray<FunctionCall> {
    const answered = new Set(
      this.items.flatMap((item) => (item._tag === "FunctionCallOutput" ? [item.callId] : []))
    )
    return this.items.filter((item): item is FunctionCall => item._tag === "FunctionCall" && !answered.has(item.callId))
  }
}
