/**
 * A chat context as an `effect/ai` prompt. Conversions are kept per item, and the messages of
 * a conversation's closed prefix per buffer, so each model call converts only what was added
 * since the last one: a turn costs the same in a long session as in a short one.
 */
import { Prompt } from "effect/ai"
import { ChatContext, type ChatItem } from "./ChatContext.ts"

const parseArguments = (text: string): unknown => {
  // A call without arguments, the common case, without a trip through the parser.
  if (text === "{}") return {}
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
  /** Grown in place when the buffer's prefix is extended (the entry is then replaced), so
   * extending it copies nothing and a prompt costs the same at turn 5,000 as at turn 100. Only
   * the buffer's current entry refers to it, so its length is always the prefix's. */
  readonly messages: Array<Prompt.Message>
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
  const from: Prefix = known !== undefined && known.items <= length ? known : { items: 0, messages: [] }
  const converted = convertItems(buffer, from.items, length)
  // One copy of the prefix: a provider reads the prompt after this call, so it must not grow.
  const head: Array<Prompt.Message> = options.instructions ? [systemMessage(options.instructions)] : []
  const all = head.concat(from.messages, converted.messages)
  if (options.extraInstructions) all.push(systemMessage(options.extraInstructions))
  if (converted.closedAt !== undefined && converted.closedAt > from.items) {
    for (let i = 0; i < converted.closedMessages; i++) from.messages.push(converted.messages[i]!)
    prefixes.set(buffer, { items: converted.closedAt, messages: from.messages })
  }
  return Prompt.fromMessages(all)
}

const HAS_CALL = 1
const HAS_OUTPUT = 2
const SEEN_CALL = 4
const SEEN_OUTPUT = 8

/**
 * The messages of `buffer[start, end)`, and the last closed prefix seen in it (the item index of
 * a user message with no call or output open before it, and how many messages precede it).
 */
const convertItems = (buffer: ReadonlyArray<ChatItem>, start: number, end: number) => {
  const messages: Array<Prompt.Message> = []
  // What the stretch has of each call id (HAS_*), and what the loop below has passed (SEEN_*):
  // one map, made only for a stretch with calls in it (most turns have none).
  let ids: Map<string, number> | undefined
  for (let i = start; i < end; i++) {
    const item = buffer[i]!
    if (item._tag === "FunctionCall" || item._tag === "FunctionCallOutput") {
      ids ??= new Map()
      ids.set(item.callId, (ids.get(item.callId) ?? 0) | (item._tag === "FunctionCall" ? HAS_CALL : HAS_OUTPUT))
    }
  }
  let open = 0 // calls seen without their output so far, plus outputs seen without their call
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
        const known = ids!.get(item.callId)!
        ids!.set(item.callId, known | SEEN_CALL)
        if (known & SEEN_OUTPUT) open--
        else open++
        if (!(known & HAS_OUTPUT)) break
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
        const known = ids!.get(item.callId)!
        ids!.set(item.callId, known | SEEN_OUTPUT)
        if (known & SEEN_CALL) open--
        else open++
        if (!(known & HAS_CALL)) break
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
