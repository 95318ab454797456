/**
 * What a scripted realtime model (`ScriptedRealtime.layer`) records for a test to read back:
 * every connection it opened, with the operations it received and what its server side holds.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context } from "effect"
import type { ChatItem } from "../../src/ChatContext.ts"

/**
 * One operation a scripted realtime connection received (an update, a response request, audio...),
 * with the test time it came.
 *
 * @since 0.1.0
 * @category models
 */
export interface Op {
  readonly op: string
  readonly at: number
  readonly detail?: unknown
}

/**
 * What a scripted realtime connection received and what its server side holds: the operations, the
 * conversation items, instructions and tools, and whether it closed.
 *
 * @since 0.1.0
 * @category models
 */
export interface ConnectionRecord {
  readonly id: string
  readonly ops: Array<Op>
  /** What the server holds. */
  items: Array<ChatItem>
  instructions: string
  tools: ReadonlyArray<string>
  closed: boolean
  /** Responses created on it, by the agent that asked (ModelCall). */
  readonly responses: Array<{ readonly agent: string | undefined; readonly instructions: string }>
}

/**
 * What the `ScriptedRealtime` service gives a test: every connection opened, with its record.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScriptedRealtimeService {
  readonly connections: ReadonlyArray<ConnectionRecord>
}

/**
 * The recorder of a scripted realtime model's connections, provided by `layer` beside the
 * `RealtimeModel` it serves.
 *
 * @since 0.1.0
 * @category services
 */
export class ScriptedRealtime extends Context.Service<ScriptedRealtime, ScriptedRealtimeService>()("baton/testing/ScriptedRealtime") {}
