/**
 * baton's metrics, as Effect `Metric`s (served as Prometheus text by `PrometheusMetrics`, or
 * exported over OTLP): handoffs by from/to, how long the floor was in passage, turns, time to
 * first text and audio, model calls and errors by reason, tool call durations, realtime
 * connections opened vs reused, tokens and audio seconds per provider and model.
 *
 * They are derived from each session's events by one observer (`observer`, on in
 * `Observe.layer`), not counted inside the runtime: the events already say what happened.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Metric } from "effect"
import type { SessionEvent } from "../Events.ts"
import type { SessionObserver } from "../SessionObserver.ts"
import { follow } from "./Follow.ts"

const seconds = Metric.exponentialBoundaries({ start: 0.0005, factor: 2, count: 18 }) // 0.5 ms .. 65 s

/**
 * Counter `baton_sessions_total`: sessions started and closed (attribute `state`).
 *
 * @since 0.1.0
 * @category metrics
 */
export const sessions = Metric.counter("baton_sessions_total", { description: "Sessions started and closed (attribute state)" })
/**
 * Counter `baton_handoffs_total`: passes of the floor, by from, to and kind.
 *
 * @since 0.1.0
 * @category metrics
 */
export const handoffs = Metric.counter("baton_handoffs_total", { description: "Passes of the floor, by from, to and kind" })
/**
 * Counter `baton_handoffs_not_applied_total`: handoffs asked for and not applied, by agent and
 * target.
 *
 * @since 0.1.0
 * @category metrics
 */
export const handoffsNotApplied = Metric.counter("baton_handoffs_not_applied_total", { description: "Handoffs asked for but not applied, by agent and target" })
/**
 * Histogram `baton_floor_passage_seconds`: from the batch that passed the floor settling to the
 * new holder having it.
 *
 * @since 0.1.0
 * @category metrics
 */
export const floorPassage = Metric.histogram("baton_floor_passage_seconds", {
  description: "From the batch that passed the floor settling to the new holder having it",
  boundaries: seconds
})
/**
 * Counter `baton_turns_total`: user turns and agent replies (attribute `role`; `source` for
 * agents).
 *
 * @since 0.1.0
 * @category metrics
 */
export const turns = Metric.counter("baton_turns_total", { description: "User turns and agent replies (attribute role; source for agents)" })
/**
 * Counter `baton_interruptions_total`: agent speeches cut short, by agent.
 *
 * @since 0.1.0
 * @category metrics
 */
export const interruptions = Metric.counter("baton_interruptions_total", { description: "Agent speeches cut short, by agent" })
/**
 * Histogram `baton_time_to_first_text_seconds`: from a model call's request (a realtime response's
 * start) to its first text.
 *
 * @since 0.1.0
 * @category metrics
 */
export const timeToFirstText = Metric.histogram("baton_time_to_first_text_seconds", {
  description: "From a model call's request (a realtime response's start) to its first text",
  boundaries: seconds
})
/**
 * Histogram `baton_time_to_first_audio_seconds`: from a realtime response's start to its first
 * audio.
 *
 * @since 0.1.0
 * @category metrics
 */
export const timeToFirstAudio = Metric.histogram("baton_time_to_first_audio_seconds", {
  description: "From a realtime response's start to its first audio",
  boundaries: seconds
})
/**
 * Counter `baton_model_calls_total`: model calls by provider, model, kind and outcome.
 *
 * @since 0.1.0
 * @category metrics
 */
export const modelCalls = Metric.counter("baton_model_calls_total", { description: "Model calls by provider, model, kind and outcome" })
/**
 * Counter `baton_model_errors_total`: failed model calls by provider, model and reason.
 *
 * @since 0.1.0
 * @category metrics
 */
export const modelErrors = Metric.counter("baton_model_errors_total", { description: "Failed model calls by provider, model and reason" })
/**
 * Histogram `baton_tool_call_seconds`: from a tool call to its output entering the history.
 *
 * @since 0.1.0
 * @category metrics
 */
export const toolDuration = Metric.histogram("baton_tool_call_seconds", {
  description: "From a tool call to its output entering the history (outputs enter in call order once the batch settled)",
  boundaries: seconds
})
/**
 * Counter `baton_realtime_connections_total`: realtime connections by action (opened, reused,
 * updated, fell_back, closed, dropped).
 *
 * @since 0.1.0
 * @category metrics
 */
export const realtimeConnections = Metric.counter("baton_realtime_connections_total", {
  description: "Realtime connections by action: opened (fresh), reused, updated, fell_back, closed, dropped"
})
/**
 * Counter `baton_tokens_total`: tokens by provider, model and direction.
 *
 * @since 0.1.0
 * @category metrics
 */
export const tokens = Metric.counter("baton_tokens_total", { description: "Tokens by provider, model and direction (input, output)" })
/**
 * Counter `baton_audio_seconds_total`: seconds of model audio by provider and model.
 *
 * @since 0.1.0
 * @category metrics
 */
export const audioSeconds = Metric.counter("baton_audio_seconds_total", { description: "Seconds of model audio by provider and model" })
/**
 * Counter `baton_errors_total`: error events by source.
 *
 * @since 0.1.0
 * @category metrics
 */
export const errors = Metric.counter("baton_errors_total", { description: "Error events by source" })

/**
 * What a session's metrics remember between events: when calls and batches started.
 *
 * @since 0.1.0
 * @category models
 */
export interface State {
  readonly calls: Map<string, { readonly at: number; readonly name: string }>
  passStartedAt: number | undefined
}

/**
 * A fresh `State` for one session.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeState = (): State => ({ calls: new Map(), passStartedAt: undefined })

const inc = (metric: Metric.Metric<number, unknown>, attributes: Record<string, string>, by = 1) =>
  Metric.update(Metric.withAttributes(metric, attributes), by)

/** The metric updates one event makes. */
const updates = (state: State, event: SessionEvent): ReadonlyArray<Effect.Effect<void>> => {
  switch (event.type) {
    case "agent_handoff": {
      const passage = state.passStartedAt
      state.passStartedAt = undefined
      return [
        inc(handoffs, { from: event.from ?? "", to: event.to, kind: event.kind }),
        ...(passage === undefined ? [] : [Metric.update(floorPassage, (event.at - passage) / 1000)])
      ]
    }
    case "function_tools_executed":
      if (event.hasHandoff) state.passStartedAt = event.at
      return []
    case "handoff_not_applied":
      return [inc(handoffsNotApplied, { agent: event.agent, to: event.to })]
    case "speech_created":
      return [inc(turns, { role: "agent", source: event.source })]
    case "speech_finished":
      return event.interrupted ? [inc(interruptions, { agent: event.agent })] : []
    case "conversation_item_added": {
      const item = event.item
      if (item._tag === "Message" && item.role === "user") return [inc(turns, { role: "user", source: "user" })]
      if (item._tag === "FunctionCall") state.calls.set(item.callId, { at: event.at, name: item.name })
      if (item._tag === "FunctionCallOutput" && item.status !== "progress") {
        const call = state.calls.get(item.callId)
        state.calls.delete(item.callId)
        if (call) return [Metric.update(Metric.withAttributes(toolDuration, { tool: call.name, status: item.status }), (event.at - call.at) / 1000)]
      }
      return []
    }
    case "model_call": {
      const model = { provider: event.provider, model: event.model }
      return [
        inc(modelCalls, { ...model, kind: event.kind, outcome: event.outcome }),
        ...(event.outcome === "error" ? [inc(modelErrors, { ...model, reason: event.errorReason ?? "unknown" })] : []),
        // The models a fallback left: each failed a call (its own error, not this one's outcome).
        ...(event.failedOver ?? []).map((failed) => inc(modelErrors, { provider: failed.provider, model: failed.model, reason: failed.reason })),
        ...(event.firstTextMs === undefined ? [] : [Metric.update(Metric.withAttributes(timeToFirstText, { ...model, kind: event.kind }), event.firstTextMs / 1000)]),
        ...(event.firstAudioMs === undefined ? [] : [Metric.update(Metric.withAttributes(timeToFirstAudio, model), event.firstAudioMs / 1000)]),
        ...(event.inputTokens ? [inc(tokens, { ...model, direction: "input" }, event.inputTokens)] : []),
        ...(event.outputTokens ? [inc(tokens, { ...model, direction: "output" }, event.outputTokens)] : []),
        ...(event.audioOutputSeconds ? [inc(audioSeconds, { ...model, direction: "output" }, event.audioOutputSeconds)] : [])
      ]
    }
    case "realtime_connection":
      return [inc(realtimeConnections, { action: event.action })]
    case "error":
      return [inc(errors, { source: event.source })]
    case "close":
      return [inc(sessions, { state: "closed" })]
    default:
      return []
  }
}

/**
 * Updates the metrics for `events` (of one session, in order).
 *
 * @since 0.1.0
 * @category utils
 */
export const record = (state: State, events: ReadonlyArray<SessionEvent>): Effect.Effect<void> =>
  Effect.all(events.flatMap((event) => updates(state, event)), { discard: true })

/**
 * The observer that keeps the metrics of every session.
 *
 * @since 0.1.0
 * @category layers
 */
export const observer: SessionObserver = {
  name: "metrics",
  observe: (session) =>
    Effect.gen(function*() {
      yield* inc(sessions, { state: "started" })
      const state = makeState()
      yield* follow(session, (events) => record(state, events))
    })
}
