/**
 * Who is calling a model: set by baton around every model call, so providers can log it and
 * test models can record it.
 */
import { Context } from "effect"
import type { ModelInfo } from "./ModelParts.ts"

export interface ModelCallInfo {
  readonly agent: string
  readonly speechId: string
  /** A model that answers through another (`ModelFallback`) says which one answers: the call's
   * `model_call` event, metrics and usage then name it. */
  readonly served?: ((model: ModelInfo) => void) | undefined
  /** ... and which failed before it, with the reason (`baton_model_errors_total` counts them). */
  readonly failedOver?: ((model: ModelInfo, reason: string) => void) | undefined
}

export const ModelCall = Context.Reference<ModelCallInfo | undefined>("baton/ModelCall", { defaultValue: () => undefined })
