/**
 * What an agent's `onUserTurnCompleted` hook sees and decides: the user's turn (its message, and
 * the agent's context with it) before the agent replies. The hook may let the reply go on with
 * something added (retrieved documents for this reply, items kept in the context) or stop it.
 * The user's message is recorded whatever the hook decides.
 *
 * ```ts
 * const support = Agent.make({
 *   name: "support",
 *   instructions: "Answer from the manual.",
 *   onUserTurnCompleted: (turn) =>
 *     Effect.map(searchManual(turn.message.text), (found) =>
 *       found.length === 0 ? Turn.stopResponse("nothing to answer from") : Turn.reply({ instructions: `From the manual: ${found}` }))
 * })
 * ```
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import type { ChatContext, ChatItem, Message } from "./ChatContext.ts"

/**
 * The user's turn as the hook sees it: the message just recorded, and the agent's context
 * (which ends with it).
 *
 * @since 0.1.0
 * @category models
 */
export interface UserTurn {
  readonly message: Message
  readonly context: ChatContext
}

/**
 * The agent replies, with `instructions` for this reply only (not kept: retrieved text for one
 * answer) and `add`: items recorded in the agent's context after the user's message, before the
 * reply (kept for later turns too).
 *
 * @since 0.1.0
 * @category models
 */
export interface Reply {
  readonly _tag: "Reply"
  readonly instructions?: string | undefined
  readonly add: ReadonlyArray<ChatItem>
}

/**
 * The agent does not reply to this turn (the user's message stays recorded).
 *
 * @since 0.1.0
 * @category models
 */
export interface StopResponse {
  readonly _tag: "StopResponse"
  readonly reason?: string | undefined
}

/**
 * What `onUserTurnCompleted` returns; `void` is a plain reply.
 *
 * @since 0.1.0
 * @category models
 */
export type Decision = Reply | StopResponse

/**
 * Reply to the turn with extra instructions for this reply and/or items added to the context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reply = (options: { readonly instructions?: string; readonly add?: ReadonlyArray<ChatItem> } = {}): Reply => ({
  _tag: "Reply",
  instructions: options.instructions,
  add: options.add ?? []
})

/**
 * Do not reply to the turn.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stopResponse = (reason?: string): StopResponse => ({ _tag: "StopResponse", reason })

/**
 * Whether a hook's result stops the reply.
 *
 * @since 0.1.0
 * @category guards
 */
export const isStopResponse = (u: unknown): u is StopResponse =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "StopResponse"
