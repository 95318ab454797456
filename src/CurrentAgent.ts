/**
 * `CurrentAgent`: the running agent, as seen by its own hooks and tools.
 */
import { Context, type Effect } from "effect"
import type { LanguageModel } from "effect/ai"
import type { Agent } from "./Agent.ts"
import type { AgentSession } from "./AgentSession.ts"
import type { ChatContext } from "./ChatContext.ts"
import type { FloorError, TaskError } from "./Errors.ts"
import type { SpeechHandle } from "./Speech.ts"
import type { Tool } from "./Tool.ts"

/**
 * Options of `Agent.reply`: extra instructions for this reply only, a user message to add first,
 * the tool choice, and whether the user may interrupt it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReplyOptions {
  /** Extra instructions for this reply only (not kept in the context). */
  readonly instructions?: string
  /** A user message to add before replying. */
  readonly userInput?: string
  readonly toolChoice?: LanguageModel.ToolChoice<string>
  /** Whether the user may interrupt this reply (default true). */
  readonly allowInterruptions?: boolean
}

/**
 * Options of `Agent.say`: whether the user may interrupt it and whether the text enters the chat
 * context.
 *
 * @since 0.1.0
 * @category models
 */
export interface SayOptions {
  readonly allowInterruptions?: boolean
  /** Add the text to the chat context as an assistant message (default true). */
  readonly addToContext?: boolean
}

export interface AgentHandle {
  readonly agent: Agent
  /** The actor's label in events: the agent's name. */
  readonly name: string
  readonly session: AgentSession<unknown>
  /** The session's userdata (narrow it where you know its type: a tool gets it typed). */
  readonly userdata: unknown
  readonly holdsFloor: Effect.Effect<boolean>
  readonly chatContext: Effect.Effect<ChatContext>
  readonly updateChatContext: (f: (context: ChatContext) => ChatContext) => Effect.Effect<void>
  readonly say: (text: string, options?: SayOptions) => Effect.Effect<SpeechHandle, FloorError>
  readonly generateReply: (options?: ReplyOptions) => Effect.Effect<SpeechHandle, FloorError>
  /** Lends the floor to `task` and waits for its result (see `AgentTask.run`). */
  readonly runTask: (task: Agent, options?: RunTaskOptions) => Effect.Effect<unknown, TaskError>
  /** Completes the task this actor runs (see `AgentTask.complete`). */
  readonly completeTask: (result: TaskResult) => Effect.Effect<void, TaskError>
}

export interface RunTaskOptions {
  /** Tools the task's actor gets besides its own (a TaskGroup adds its "go back" tool). */
  readonly extraTools?: ReadonlyArray<Tool>
}

export type TaskResult =
  | { readonly _tag: "Success"; readonly value: unknown }
  | { readonly _tag: "Failure"; readonly error: TaskError }

/**
 * The agent whose actor runs the current tool handler or hook: its name, chat context and
 * userdata, and the operations that need the floor (reply, say, run a task, complete one). The
 * session provides it to every handler and hook; `Agent.reply` and `Agent.say` use it.
 *
 * @since 0.1.0
 * @category services
 */
export class CurrentAgent extends Context.Service<CurrentAgent, AgentHandle>()("baton/CurrentAgent") {}
