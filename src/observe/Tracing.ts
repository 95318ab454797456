/**
 * Traces of each session, derived from its events (no span is opened inside the runtime), and
 * exported over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (`OTEL_SERVICE_NAME` names the
 * service; off when unset).
 *
 * The tree follows the actors: a `baton.session` span; under it one `baton.agent` span per
 * activation (from the floor reaching the agent to it passing on) and one `baton.user_turn` per
 * user turn (linked to the agent holding the floor); under an agent, its `baton.model_call`
 * (provider, model, time to first text and audio, tokens), `baton.tool_call` and
 * `baton.realtime.<action>` spans, and the `baton.handoff` that passes its floor on (from, to,
 * kind, reason, passage time), linked to the incoming agent's span, which links back to the
 * outgoing one. Spans carry the events' own times (the session's Clock).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Clock, Config, Context, Effect, Exit, Layer, Option, Tracer } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpExporter, OtlpMetrics, OtlpSerialization, OtlpTracer } from "effect/observability"
import type { SessionEvent } from "../Events.ts"
import * as SessionObserver from "../SessionObserver.ts"
import { follow } from "./Follow.ts"

const ns = (ms: number): bigint => BigInt(Math.round(ms * 1_000_000))

interface State {
  session: Tracer.Span | undefined
  /** Each agent's latest activation span (ended once it passed the floor). */
  readonly agents: Map<string, Tracer.Span>
  holder: Tracer.Span | undefined
  turn: Tracer.Span | undefined
  turns: number
  speaking: number
  readonly calls: Map<string, Tracer.Span>
  passStartedAt: number | undefined
  lastAt: number
}

const makeState = (): State => ({
  session: undefined, agents: new Map(), holder: undefined, turn: undefined, turns: 0, speaking: 0,
  calls: new Map(), passStartedAt: undefined, lastAt: 0
})

/**
 * Turns a session's events into spans of `tracer`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeSpans = (tracer: Tracer.Tracer, sessionId: string) => {
  const state = makeState()
  const open = (
    name: string,
    at: number,
    parent: Tracer.AnySpan | undefined,
    attributes: Record<string, unknown>,
    options: { readonly links?: Array<Tracer.SpanLink>; readonly kind?: Tracer.SpanKind } = {}
  ): Tracer.Span => {
    const span = tracer.span({
      name, parent: Option.fromUndefinedOr(parent), annotations: Context.empty(), links: options.links ?? [],
      startTime: ns(at), kind: options.kind ?? "internal", root: parent === undefined, sampled: true
    })
    for (const [key, value] of Object.entries(attributes)) if (value !== undefined) span.attribute(key, value)
    return span
  }
  const end = (span: Tracer.Span | undefined, at: number, exit: Exit.Exit<unknown, unknown> = Exit.void) => {
    if (span && span.status._tag === "Started") span.end(ns(Math.max(at, Number(span.status.startTime) / 1e6)), exit)
  }
  const session = (at: number) => state.session ??= open("baton.session", at, undefined, { "baton.session.id": sessionId }, { kind: "server" })
  const agentSpan = (agent: string | undefined, at: number) => (agent && state.agents.get(agent)) || session(at)
  const endTurn = (at: number) => {
    end(state.turn, at)
    state.turn = undefined
  }

  const handle = (event: SessionEvent): void => {
    const at = event.at
    state.lastAt = Math.max(state.lastAt, at)
    const root = session(at)
    switch (event.type) {
      case "agent_handoff": {
        const outgoing = state.holder
        const passStarted = state.passStartedAt ?? at
        state.passStartedAt = undefined
        const incoming = open("baton.agent", at, root, {
          "baton.agent": event.to, "baton.activation.kind": event.kind, "baton.activation.resumed": event.resumed
        }, { links: outgoing ? [{ span: outgoing, attributes: { "baton.link": "floor_from" } }] : [] })
        const handoff = open("baton.handoff", passStarted, outgoing ?? root, {
          "baton.handoff.from": event.from, "baton.handoff.to": event.to, "baton.handoff.kind": event.kind,
          "baton.handoff.resumed": event.resumed, "baton.handoff.reason": event.reason, "baton.handoff.passage_ms": at - passStarted
        }, { links: [{ span: incoming, attributes: { "baton.link": "floor_to" } }] })
        end(handoff, at)
        end(outgoing, at)
        state.agents.set(event.to, incoming)
        state.holder = incoming
        return
      }
      case "function_tools_executed":
        if (event.hasHandoff) state.passStartedAt = at
        return
      case "conversation_item_added": {
        const item = event.item
        if (item._tag === "Message" && item.role === "user") {
          endTurn(at)
          state.turn = open("baton.user_turn", at, root, { "baton.turn.index": ++state.turns, "baton.turn.agent": item.agent }, {
            links: state.holder ? [{ span: state.holder, attributes: { "baton.link": "heard_by" } }] : []
          })
        } else if (item._tag === "FunctionCall") {
          state.calls.set(item.callId, open("baton.tool_call", at, agentSpan(item.agent ?? event.agent, at), {
            "baton.tool.name": item.name, "baton.tool.call_id": item.callId
          }))
        } else if (item._tag === "FunctionCallOutput" && item.status !== "progress") {
          const span = state.calls.get(item.callId)
          state.calls.delete(item.callId)
          span?.attribute("baton.tool.status", item.status)
          end(span, at, item.isError ? Exit.fail(item.status) : Exit.void)
        }
        return
      }
      case "speech_created":
        state.speaking++
        return
      case "speech_finished":
        state.speaking = Math.max(0, state.speaking - 1)
        return
      case "agent_state_changed":
        if (event.state === "listening" && state.speaking === 0) endTurn(at)
        return
      case "model_call": {
        const span = open("baton.model_call", event.startedAt, agentSpan(event.agent, at), {
          "gen_ai.provider.name": event.provider, "gen_ai.request.model": event.model,
          "gen_ai.usage.input_tokens": event.inputTokens, "gen_ai.usage.output_tokens": event.outputTokens,
          "baton.model.kind": event.kind, "baton.model.first_text_ms": event.firstTextMs,
          "baton.model.first_audio_ms": event.firstAudioMs, "baton.model.audio_output_seconds": event.audioOutputSeconds,
          "baton.model.outcome": event.outcome, "baton.model.error_reason": event.errorReason
        }, { kind: "client" })
        end(span, at, event.outcome === "error" ? Exit.fail(event.errorReason ?? "error") : Exit.void)
        return
      }
      case "realtime_connection":
        end(open(`baton.realtime.${event.action}`, at, agentSpan(event.agent, at), {
          "baton.realtime.connection_id": event.connectionId, "baton.realtime.action": event.action, "baton.agent": event.agent
        }), at)
        return
      case "handoff_not_applied":
        agentSpan(event.agent, at).event("baton.handoff_not_applied", ns(at), { to: event.to, reason: event.reason })
        return
      case "error":
        agentSpan(event.agent, at).event("baton.error", ns(at), { source: event.source, message: event.message.slice(0, 500), recoverable: event.recoverable })
        return
      case "close":
        if (event.usage) {
          root.attribute("gen_ai.usage.input_tokens", event.usage.total.inputTokens)
          root.attribute("gen_ai.usage.output_tokens", event.usage.total.outputTokens)
          root.attribute("baton.model.calls", event.usage.total.calls)
        }
        finish(at)
        return
      default:
        return
    }
  }

  /** Ends every span still open (the session closed, or its observer stopped). */
  const finish = (at: number = state.lastAt) => {
    endTurn(at)
    for (const span of state.calls.values()) end(span, at, Exit.interrupt())
    state.calls.clear()
    for (const span of state.agents.values()) end(span, at)
    end(state.session, at)
  }

  return { handle, finish, state }
}

/**
 * The observer that traces every session with the context's `Tracer`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const observer: SessionObserver.SessionObserver = {
  name: "tracing",
  observe: (session) =>
    Effect.gen(function*() {
      const tracer = yield* Tracer.Tracer
      const clock = yield* Clock.Clock
      const spans = makeSpans(tracer, session.id)
      // Registered before `follow`, so it runs after follow's last flush.
      yield* Effect.addFinalizer(() => Effect.sync(() => spans.finish(Math.max(spans.state.lastAt, clock.currentTimeMillisUnsafe()))))
      yield* follow(session, (events) => Effect.sync(() => events.forEach(spans.handle)))
    })
}

const exporterOn = (name: string) =>
  Config.String(name).pipe(
    Config.map((list) => list.split(",").map((x) => x.trim().toLowerCase()).includes("otlp")),
    Config.withDefault(true)
  )

/**
 * `base` with `/v1/<signal>` appended to its path.
 *
 * @since 0.1.0
 * @category utils
 */
export const signalUrl = (base: string, signal: "traces" | "metrics"): string => {
  const url = new URL(base)
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/${signal}`
  return url.toString()
}

/**
 * OTLP/HTTP (JSON) export of baton's traces and metrics, configured by the standard variables:
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (off when unset; traces to `/v1/traces`, metrics to
 * `/v1/metrics`), `OTEL_SERVICE_NAME` (default "baton"), `OTEL_SDK_DISABLED`, and
 * `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER` (default "otlp", as the OpenTelemetry spec
 * says; "none" turns one off). Adds the tracing observer when on (the metrics observer is
 * `Observe.layerConfig`'s, so metrics are kept whether or not they are exported).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<OtlpExporter.Flusher, Config.ConfigError> = Layer.unwrap(Effect.gen(function*() {
  const endpoint = yield* Config.option(Config.String("OTEL_EXPORTER_OTLP_ENDPOINT"))
  const disabled = yield* Config.Boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false))
  if (disabled || Option.isNone(endpoint) || endpoint.value.trim() === "") return OtlpExporter.layerFlusher
  const base = endpoint.value.trim()
  const resource = { serviceName: yield* Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault("baton")) }
  const traces = yield* exporterOn("OTEL_TRACES_EXPORTER")
  const metrics = yield* exporterOn("OTEL_METRICS_EXPORTER")
  const exporters = Layer.mergeAll(
    traces ? OtlpTracer.layer({ url: signalUrl(base, "traces"), resource }) : OtlpExporter.layerFlusher,
    metrics ? OtlpMetrics.layer({ url: signalUrl(base, "metrics"), resource }) : OtlpExporter.layerFlusher
  ).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer))
  return traces ? Layer.provideMerge(SessionObserver.layer(observer), exporters) : exporters
}))
