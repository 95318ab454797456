/**
 * A session's events: stamped with consecutive sequence numbers and the clock's time, kept (the
 * last `LOG_LIMIT`), published to the session's stream, and folded into its usage. `emit` is
 * synchronous, so a floor change and its event are one step (rule 1).
 *
 * A record and functions over it (docs/patterns.md): `EventLog.make(now)` once per session, then
 * `EventLog.emit(events, input)`, `EventLog.since(events, seq)` and the like.
 */
import { Effect, PubSub, Stream } from "effect"
import type { EventInput, ModelCallEvent, SessionEvent } from "../Events.ts"
import * as Usage from "../observe/Usage.ts"

/** How many past events a session keeps for `eventLog` and run results. */
export const LOG_LIMIT = 20_000

/** The one mutable part: written by the functions of this module only. */
interface State {
  readonly log: Array<SessionEvent>
  /** The sequence number the next event gets. */
  seq: number
  /** How many `live` streams are running: counted from before a stream subscribes to after it
   * has let go. With none, an event is not published at all (a publish costs a handoff about
   * 2%), and it would reach no one either way. */
  listeners: number
  /** Told after every event (a durable session's journal: something may have changed). */
  watcher: (() => void) | undefined
}

export interface EventLog {
  readonly now: () => number
  readonly pubsub: PubSub.PubSub<SessionEvent>
  readonly usage: Usage.Collector
  /** The events emitted from the moment the stream starts. */
  readonly live: Stream.Stream<SessionEvent>
  readonly state: State
}

export const make = (now: () => number): Effect.Effect<EventLog> =>
  Effect.map(PubSub.unbounded<SessionEvent>(), (pubsub) => {
    const state: State = { log: [], seq: 0, listeners: 0, watcher: undefined }
    const listen = Effect.acquireRelease(
      Effect.sync(() => {
        state.listeners++
      }),
      () =>
        Effect.sync(() => {
          state.listeners--
        })
    )
    return { now, pubsub, usage: Usage.collector(), live: Stream.unwrap(Effect.as(listen, Stream.fromPubSub(pubsub))), state }
  })

/** Stamps, keeps and publishes an event, and returns it. */
export const emit = (events: EventLog, input: EventInput): SessionEvent => {
  const state = events.state
  // Every caller passes a fresh literal: it becomes the event (no copy per event).
  const event = input as { seq: number; at: number } & EventInput
  event.seq = state.seq++
  event.at = events.now()
  if (input.type === "model_call") events.usage.add(event as ModelCallEvent)
  const log = state.log
  log.push(event as SessionEvent)
  // Trimmed in chunks: one splice per 1,000 events, not one per event.
  if (log.length > LOG_LIMIT + 1000) log.splice(0, log.length - LOG_LIMIT)
  if (state.listeners > 0) PubSub.publishUnsafe(events.pubsub, event as SessionEvent)
  state.watcher?.()
  return event as SessionEvent
}

/** The kept events from sequence number `from` on. */
export const since = (events: EventLog, from: number): Array<SessionEvent> => {
  const log = events.state.log
  // Sequence numbers are consecutive: an index from the first kept one.
  return log.slice(Math.max(0, from - (log[0]?.seq ?? 0)))
}

/** Every kept event. */
export const all = (events: EventLog): ReadonlyArray<SessionEvent> => events.state.log

/** The sequence number the next event gets. */
export const next = (events: EventLog): number => events.state.seq

/** How many `live` streams are running. */
export const listeners = (events: EventLog): number => events.state.listeners

/** Tells `watcher` after every event from now on (one watcher: a durable session's journal). */
export const watch = (events: EventLog, watcher: () => void): void => {
  events.state.watcher = watcher
}
