/**
 * What a session's model calls used: calls, tokens in and out, and seconds of audio, per
 * provider and model and per agent (as LiveKit's usage collector gives). Folded from the
 * session's `model_call` events; the session keeps one (`session.usage`, the `close` event).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import type { ModelCallEvent } from "../Events.ts"

/**
 * Calls, failed calls, tokens in and out, and seconds of model audio.
 *
 * @since 0.1.0
 * @category models
 */
export interface Counts {
  readonly calls: number
  readonly errors: number
  readonly inputTokens: number
  readonly outputTokens: number
  readonly audioOutputSeconds: number
}

/**
 * The counts of one provider's model.
 *
 * @since 0.1.0
 * @category models
 */
export interface ModelUsage extends Counts {
  readonly provider: string
  readonly model: string
}

/**
 * The counts of one agent's calls.
 *
 * @since 0.1.0
 * @category models
 */
export interface AgentUsage extends Counts {
  readonly agent: string
}

/**
 * What a session's model calls used: totals, per model and per agent. `session.usage`, the close
 * event and `Usage.fromEvents` give it.
 *
 * @since 0.1.0
 * @category models
 */
export interface UsageSummary {
  readonly total: Counts
  readonly byModel: ReadonlyArray<ModelUsage>
  readonly byAgent: ReadonlyArray<AgentUsage>
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

const zero = (): Mutable<Counts> => ({ calls: 0, errors: 0, inputTokens: 0, outputTokens: 0, audioOutputSeconds: 0 })

const addTo = (counts: Mutable<Counts>, event: ModelCallEvent) => {
  counts.calls++
  if (event.outcome === "error") counts.errors++
  counts.inputTokens += event.inputTokens ?? 0
  counts.outputTokens += event.outputTokens ?? 0
  counts.audioOutputSeconds += event.audioOutputSeconds ?? 0
}

/**
 * Adds `model_call` events up into a `UsageSummary`. Made by `collector`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Collector {
  readonly add: (event: ModelCallEvent) => void
  readonly summary: () => UsageSummary
}

/**
 * An empty collector (in insertion order: models and agents as they first called).
 *
 * @since 0.1.0
 * @category constructors
 */
export const collector = (): Collector => {
  const total = zero()
  const byModel = new Map<string, Mutable<ModelUsage>>()
  const byAgent = new Map<string, Mutable<AgentUsage>>()
  return {
    add: (event) => {
      addTo(total, event)
      const key = `${event.provider}\u0000${event.model}`
      let model = byModel.get(key)
      if (!model) {
        // Literal shapes, not spreads: this runs for every model call of every session.
        model = { provider: event.provider, model: event.model, calls: 0, errors: 0, inputTokens: 0, outputTokens: 0, audioOutputSeconds: 0 }
        byModel.set(key, model)
      }
      addTo(model, event)
      let agent = byAgent.get(event.agent)
      if (!agent) {
        agent = { agent: event.agent, calls: 0, errors: 0, inputTokens: 0, outputTokens: 0, audioOutputSeconds: 0 }
        byAgent.set(event.agent, agent)
      }
      addTo(agent, event)
    },
    summary: () => ({
      total: { ...total },
      byModel: [...byModel.values()].map((m) => ({ ...m })),
      byAgent: [...byAgent.values()].map((a) => ({ ...a }))
    })
  }
}

/**
 * The usage of `events` (any session events; only `model_call` ones count).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromEvents = (events: ReadonlyArray<{ readonly type: string }>): UsageSummary => {
  const c = collector()
  for (const event of events) if (event.type === "model_call") c.add(event as ModelCallEvent)
  return c.summary()
}
