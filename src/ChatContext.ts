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
  static readonly empty = new ChatContext([])
  static make(items: Iterable<ChatItem>): ChatContext {
    return new ChatContext([...items])
  }

  readonly items: ReadonlyArray<ChatItem>
  private constructor(items: ReadonlyArray<ChatItem>) {
    this.items = items
  }

  get length(): number {
    return this.items.length
  }

  append(...items: ReadonlyArray<ChatItem>): ChatContext {
    return items.length === 0 ? this : new ChatContext([...this.items, ...items])
  }

  has(id: string): boolean {
    return this.items.some((item) => item.id === id)
  }

  /** A copy without the kinds of items the options exclude. */
  copy(options: CopyOptions = {}): ChatContext {
    return new ChatContext(this.items.filter(keep(options)))
  }

  /**
   * The last `turns` turns, where a turn starts at a user message. Leading instructions are
   * kept, and a function call is never separated from its output.
   */
  truncate(turns: number): ChatContext {
    if (turns <= 0) return new ChatContext(this.items.filter(isInstruction))
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
    return new ChatContext([...head, ...this.items.slice(start)])
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
 * Converts a context to an `effect/ai` prompt: the agent's instructions first, then the items;
 * `extraInstructions` (per-reply instructions) go last. Handoff records are not sent; a call
 * without an output (still running) and an output without its call are left out, so the prompt
 * is always one a provider accepts.
 */
export const toPrompt = (
  context: ChatContext,
  options: { readonly instructions?: string | undefined; readonly extraInstructions?: string | undefined } = {}
): Prompt.Prompt => {
  const messages: Array<Prompt.Message> = []
  if (options.instructions) messages.push(systemMessage(options.instructions))
  const outputs = new Set<string>()
  const calls = new Set<string>()
  for (const item of context.items) {
    if (item._tag === "FunctionCallOutput") outputs.add(item.callId)
    else if (item._tag === "FunctionCall") calls.add(item.callId)
  }
  let assistant: Array<Prompt.AssistantMessagePart> | undefined
  let tool: Array<Prompt.ToolMessagePart> | undefined
  const flush = () => {
    if (assistant) messages.push(Prompt.makeMessage("assistant", { content: assistant }))
    if (tool) messages.push(Prompt.makeMessage("tool", { content: tool }))
    assistant = undefined
    tool = undefined
  }
  for (const item of context.items) {
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
        messages.push(cached(item, () =>
          item.role === "user"
            ? Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: item.text })] })
            : Prompt.makeMessage("system", { content: item.text })
        ))
        break
      }
      case "FunctionCall": {
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
  if (options.extraInstructions) messages.push(systemMessage(options.extraInstructions))
  return Prompt.fromMessages(messages)
}
