/**
 * A session's events: stamped with consecutive sequence numbers and the clock's time, kept (the
 * last `LOG_LIMIT`), published to the session's stream, and folded into its usage. `emit` is
 * synchronous, so a floor change and its event are one step (rule 1).
 */
import { Effect, PubSub, Stream } from "effect"
import type { EventInput, ModelCallEvent, SessionEvent } from "../Events.ts"
import * as Usage from "../observe/Usage.ts"

/** How many past events a session keeps for `eventLog` and run results. */
export const LOG_LIMIT = 20_000

export interface EventLog {
  readonly emit: (input: EventInput) => SessionEvent
  /** The kept events from sequence number `from` on. */
  readonly since: (from: number) => Array<SessionEvent>
  /** Every kept event. */
  readonly all: () => Array<SessionEvent>
  /** The sequence number the next event gets. */
  readonly next: () => number
  /** The events emitted from the moment the stream starts. */
  readonly live: Stream.Stream<SessionEvent>
  /** How many `live` streams are running: with none, an event is not published at all. */
  readonly listeners: () => number
  readonly usage: Usage.Collector
}

export const make = (now: () => number): Effect.Effect<EventLog> =>
  Effect.map(PubSub.unbounded<SessionEvent>(), (pubsub) => {
    const usage = Usage.collector()
    const log: Array<SessionEvent> = []
    let seq = 0
    // Counted from before the stream subscribes to after it has let go: an event published
    // while nobody listens reaches no one either way, and a publish costs a handoff about 2%.
    let listeners = 0
    const listen = Effect.acquireRelease(
      Effect.sync(() => {
        listeners++
      }),
      () =>
        Effect.sync(() => {
          listeners--
        })
    )
    return {
      emit: (input) => {
        // Every caller passes a fresh literal: it becomes the event (no copy per event).
        const event = input as { seq: number; at: number } & EventInput
        event.seq = seq++
        event.at = now()
        if (input.type === "model_call") usage.add(event as ModelCallEvent)
        log.push(event as SessionEvent)
        // Trimmed in chunks: one splice per 1,000 events, not one per event.
        if (log.length > LOG_LIMIT + 1000) log.splice(0, log.length - LOG_LIMIT)
        if (listeners > 0) PubSub.publishUnsafe(pubsub, event as SessionEvent)
        return event as SessionEvent
      },
      // Sequence numbers are consecutive: an index from the first kept one.
      since: (from) => log.slice(Math.max(0, from - (log[0]?.seq ?? 0))),
      all: () => log,
      next: () => seq,
      live: Stream.unwrap(Effect.as(listen, Stream.fromPubSub(pubsub))),
      listeners: () => listeners,
      usage
    }
  })
