/**
 * Who is calling a model: set by baton around every model call, so providers can log it and
 * test models can record it.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context } from "effect"
import type { ModelInfo } from "./ModelParts.ts"

/**
 * Who calls a model: the agent and speech, and callbacks a fallback model uses to say which model
 * answered and which failed.
 *
 * @since 0.1.0
 * @category models
 */
export interface ModelCallInfo {
  readonly agent: string
  readonly speechId: string
  /** A model that answers through another (`ModelFallback`) says which one answers: the call's
   * `model_call` event, metrics and usage then name it. */
  readonly served?: ((model: ModelInfo) => void) | undefined
  /** ... and which failed before it, with the reason (`baton_model_errors_total` counts them). */
  readonly failedOver?: ((model: ModelInfo, reason: string) => void) | undefined
}

/**
 * The model call in progress, set by baton around each model request so providers and fallbacks
 * can report who served it; `undefined` outside one.
 *
 * @since 0.1.0
 * @category services
 */
export const ModelCall = Context.Reference<ModelCallInfo | undefined>("baton/ModelCall", { defaultValue: () => undefined })
