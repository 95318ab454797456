/**
 * Who is calling a model: set by baton around every model call, so providers can log it and
 * test models can record it.
 */
import { Context } from "effect"

export interface ModelCallInfo {
  readonly agent: string
  readonly speechId: string
}

export const ModelCall = Context.Reference<ModelCallInfo | undefined>("baton/ModelCall", { defaultValue: () => undefined })
