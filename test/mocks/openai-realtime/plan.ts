/** Builders for response plans, and the default echo script. */
import type { ErrorSpec, FunctionCallOutput, MessageOutput, OutputPlan, ResponsePlan, Script, ScriptContext } from "./types.ts"

type PlanExtras = Omit<ResponsePlan, "output">

export const Plan = {
  /** An output message: text (text modality) or spoken transcript + audio (audio modality). */
  message: (text: string | ReadonlyArray<string>, extra: Omit<MessageOutput, "type" | "text"> = {}): MessageOutput => ({
    type: "message",
    text,
    ...extra
  }),
  functionCall: (
    name: string,
    args: FunctionCallOutput["arguments"],
    extra: Omit<FunctionCallOutput, "type" | "name" | "arguments"> = {}
  ): FunctionCallOutput => ({ type: "function_call", name, arguments: args, ...extra }),
  /** A response of several output items (e.g. a preamble then a call, or two calls). */
  of: (output: ReadonlyArray<OutputPlan>, extra: PlanExtras = {}): ResponsePlan => ({ output, ...extra }),
  say: (text: string | ReadonlyArray<string>, extra: PlanExtras & Omit<MessageOutput, "type" | "text"> = {}): ResponsePlan => {
    const { audioMs, chunkMs, ...rest } = extra
    return {
      output: [Plan.message(text, { ...(audioMs === undefined ? {} : { audioMs }), ...(chunkMs === undefined ? {} : { chunkMs }) })],
      ...rest
    }
  },
  call: (name: string, args: FunctionCallOutput["arguments"], extra: PlanExtras & { callId?: string } = {}): ResponsePlan => {
    const { callId, ...rest } = extra
    return { output: [Plan.functionCall(name, args, callId === undefined ? {} : { callId })], ...rest }
  },
  sayThenCall: (text: string, name: string, args: FunctionCallOutput["arguments"], extra: PlanExtras = {}): ResponsePlan => ({
    output: [Plan.message(text), Plan.functionCall(name, args)],
    ...extra
  }),
  /** Answer the `response.create` with an `error` event and no response. */
  refuse: (error: ErrorSpec): ResponsePlan => ({ error }),
  /** A response that ends with `response.done` status `failed`. */
  fail: (code: string, extra: PlanExtras = {}): ResponsePlan => ({ output: [], status: "failed", failure: { code }, ...extra })
} as const

/** Default script: echoes the last user text, or reports the last tool output. */
export const echoScript = (ctx: ScriptContext): ResponsePlan => {
  const last = ctx.lastItem
  if (last?.type === "function_call_output") return Plan.say(`Tool result: ${last.output ?? ""}`)
  return Plan.say(ctx.lastUserText ? `You said: ${ctx.lastUserText}` : "Hello from the mock.")
}

/** A function script, or a list consumed in order across the server's life (then the echo script). */
export const scriptRunner = (script: Script | undefined): ((ctx: ScriptContext) => ResponsePlan | Promise<ResponsePlan>) => {
  if (script === undefined) return echoScript
  if (typeof script === "function") return script
  const plans = script as ReadonlyArray<ResponsePlan>
  let next = 0
  return (ctx) => (next < plans.length ? plans[next++]! : echoScript(ctx))
}
