/**
 * The chat context: the ordered items an agent's model sees, and the session's shared history.
 *
 * A `ChatContext` is an immutable value. Actors own theirs and replace it as the conversation
 * grows; the session keeps one more for the whole conversation (every agent's items plus the
 * handoff records).
 */
import { Prompt } from "effect/ai"

export type Role = "system" | "developer" | "user" | "assistant"

/** How a function call ended. Every call in a context gets exactly one output (rule 4). */
export type OutputStatus = "ok" | "error" | "cancelled" | "interrupted" | "handoff" | "progress"

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

export interface FunctionCall {
  readonly _tag: "FunctionCall"
  readonly id: string
  readonly callId: string
  readonly name: string
  /** The arguments as the model sent them (a JSON text, possibly invalid). */
  readonly arguments: string
  readonly agent?: string | undefined
}

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

export type HandoffKind = "start" | "handoff" | "task" | "return"

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

export type ChatItem = Message | FunctionCall | FunctionCallOutput | AgentHandoff

let counter = 0
/** Process-unique ids for chat items. */
export const nextId = (prefix: string): string => `${prefix}_${(++counter).toString(36)}`

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

export const agentHandoff = (
  fields: {
    readonly from?: string | undefined
    readonly to: string
    readonly kind: HandoffKind
    readonly resumed: boolean
    readonly reason?: string | undefined
  }
): AgentHandoff => ({ _tag: "AgentHandoff", id: nextId("handoff"), ...fields })

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

  /** @internal The shared buffer and this context's length, for `toPrompt`'s prefix cache. */
  static view(context: ChatContext): { readonly buffer: ReadonlyArray<ChatItem>; readonly length: number } {
    return { buffer: context.#buffer, length: context.length }
  }

  /** A copy without the kinds of items the options exclude. */
  copy(options: CopyOptions = {}): ChatContext {
    return ChatContext.make(this.items.filter(keep(options)))
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

const parseArguments = (text: string): unknown => {
  const parsed = parseJson(text)
  return parsed === undefined ? text : parsed
}

const parseJson = (text: string): unknown => {
  if (text.trim() === "") return {}
  // JSON.parse is the one place a throw is the API; it never escapes this function.
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * What an item becomes in a prompt, kept per item: items are immutable, and building an
 * `effect/ai` part or message costs about a microsecond, which every model call would
 * otherwise pay again for the whole history.
 */
const converted = new WeakMap<ChatItem, Prompt.Message | Prompt.Part>()
const systemMessages = new Map<string, Prompt.SystemMessage>()

const cached = <A extends Prompt.Message | Prompt.Part>(item: ChatItem, make: () => A): A => {
  let value = converted.get(item) as A | undefined
  if (value === undefined) {
    value = make()
    converted.set(item, value)
  }
  return value
}

/** Agents' instructions recur on every call; a bounded cache keeps the few in use. */
const systemMessage = (content: string): Prompt.SystemMessage => {
  let value = systemMessages.get(content)
  if (value === undefined) {
    if (systemMessages.size >= 256) systemMessages.clear()
    value = Prompt.makeMessage("system", { content })
    systemMessages.set(content, value)
  }
  return value
}

/**
 * The messages of a closed prefix of a buffer, kept so the next prompt of the same conversation
 * converts only what was added since. A prefix is closed at a user message before which every
 * function call has its output (and every output its call): nothing after it can change how the
 * items before it are grouped or filtered.
 */
interface Prefix {
  readonly items: number
  readonly messages: ReadonlyArray<Prompt.Message>
}
const prefixes = new WeakMap<ReadonlyArray<ChatItem>, Prefix>()

/**
 * Converts a context to an `effect/ai` prompt: the agent's instructions first, then the items;
 * `extraInstructions` (per-reply instructions) go last. Handoff records are not sent; a call
 * without an output (still running) and an output without its call are left out, so the prompt
 * is always one a provider accepts.
 */
export const toPrompt = (
  context: ChatContext,
  options: { readonly instructions?: string | undefined; readonly extraInstructions?: string | undefined } = {}
): Prompt.Prompt => {
  const { buffer, length } = ChatContext.view(context)
  const known = prefixes.get(buffer)
  const from = known !== undefined && known.items <= length ? known : { items: 0, messages: [] }
  const converted = convertItems(buffer, from.items, length)
  if (converted.closedAt !== undefined && converted.closedAt > from.items) {
    prefixes.set(buffer, {
      items: converted.closedAt,
      messages: [...from.messages, ...converted.messages.slice(0, converted.closedMessages)]
    })
  }
  const messages: Array<Prompt.Message> = []
  if (options.instructions) messages.push(systemMessage(options.instructions))
  for (const m of from.messages) messages.push(m)
  for (const m of converted.messages) messages.push(m)
  if (options.extraInstructions) messages.push(systemMessage(options.extraInstructions))
  return Prompt.fromMessages(messages)
}

/**
 * The messages of `buffer[start, end)`, and the last closed prefix seen in it (the item index of
 * a user message with no call or output open before it, and how many messages precede it).
 */
const convertItems = (buffer: ReadonlyArray<ChatItem>, start: number, end: number) => {
  const messages: Array<Prompt.Message> = []
  const outputs = new Set<string>()
  const calls = new Set<string>()
  for (let i = start; i < end; i++) {
    const item = buffer[i]!
    if (item._tag === "FunctionCallOutput") outputs.add(item.callId)
    else if (item._tag === "FunctionCall") calls.add(item.callId)
  }
  let open = 0 // calls seen without their output so far, plus outputs seen without their call
  const seenCalls = new Set<string>()
  const seenOutputs = new Set<string>()
  let closedAt: number | undefined
  let closedMessages = 0
  let assistant: Array<Prompt.AssistantMessagePart> | undefined
  let tool: Array<Prompt.ToolMessagePart> | undefined
  const flush = () => {
    if (assistant) messages.push(Prompt.makeMessage("assistant", { content: assistant }))
    if (tool) messages.push(Prompt.makeMessage("tool", { content: tool }))
    assistant = undefined
    tool = undefined
  }
  for (let i = start; i < end; i++) {
    const item = buffer[i]!
    switch (item._tag) {
      case "Message": {
        if (item.role === "assistant") {
          if (tool) flush()
          if (item.text === "") break
          assistant ??= []
          assistant.push(cached(item, () => Prompt.makePart("text", { text: item.text })))
          break
        }
        flush()
        if (item.role === "user" && open === 0) {
          closedAt = i
          closedMessages = messages.length
        }
        messages.push(cached(item, () =>
          item.role === "user"
            ? Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: item.text })] })
            : Prompt.makeMessage("system", { content: item.text })
        ))
        break
      }
      case "FunctionCall": {
        seenCalls.add(item.callId)
        if (seenOutputs.has(item.callId)) open--
        else open++
        if (!outputs.has(item.callId)) break
        if (tool) flush()
        assistant ??= []
        assistant.push(cached(item, () =>
          Prompt.makePart("tool-call", {
            id: item.callId,
            name: item.name,
            params: parseArguments(item.arguments),
            providerExecuted: false
          })
        ))
        break
      }
      case "FunctionCallOutput": {
        seenOutputs.add(item.callId)
        if (seenCalls.has(item.callId)) open--
        else open++
        if (!calls.has(item.callId)) break
        if (assistant) {
          messages.push(Prompt.makeMessage("assistant", { content: assistant }))
          assistant = undefined
        }
        tool ??= []
        tool.push(cached(item, () =>
          Prompt.makePart("tool-result", {
            id: item.callId,
            name: item.name,
            isFailure: item.isError,
            result: item.output,
            providerExecuted: false
          })
        ))
        break
      }
      case "AgentHandoff":
        break
    }
  }
  flush()
  return { messages, closedAt, closedMessages }
}
