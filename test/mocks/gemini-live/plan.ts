/** Builders for Gemini model-turn plans, and the default echo script. */
import type { GeminiScript, GeminiScriptContext, GeminiTurnPlan, ToolCallPlan } from "./types.ts"

type Extras = Omit<GeminiTurnPlan, "text" | "toolCalls">

export const GeminiPlan = {
  say: (text: string | ReadonlyArray<string>, extra: Extras = {}): GeminiTurnPlan => ({ text, ...extra }),
  call: (name: string, args?: Readonly<Record<string, unknown>>, extra: Extras & { id?: string | null } = {}): GeminiTurnPlan => {
    const { id, ...rest } = extra
    const call: ToolCallPlan = { name, ...(args === undefined ? {} : { args }), ...(id === undefined ? {} : { id }) }
    return { toolCalls: [call], ...rest }
  },
  calls: (calls: ReadonlyArray<ToolCallPlan>, extra: Extras = {}): GeminiTurnPlan => ({ toolCalls: calls, ...extra }),
  sayThenCall: (text: string, name: string, args?: Readonly<Record<string, unknown>>, extra: Extras = {}): GeminiTurnPlan => ({
    text,
    toolCalls: [{ name, ...(args === undefined ? {} : { args }) }],
    ...extra
  }),
  /** The model stays silent. */
  silent: null
} as const

/** Default script: reports tool results, else echoes the last user text. */
export const geminiEchoScript = (ctx: GeminiScriptContext): GeminiTurnPlan => {
  if (ctx.functionResponses.length > 0) {
    return GeminiPlan.say(`Tool result: ${ctx.functionResponses.map((r) => JSON.stringify(r.response ?? {})).join(", ")}`)
  }
  return GeminiPlan.say(ctx.lastUserText ? `You said: ${ctx.lastUserText}` : "Hello from the mock.")
}

export const geminiScriptRunner = (
  script: GeminiScript | undefined
): ((ctx: GeminiScriptContext) => GeminiTurnPlan | null | Promise<GeminiTurnPlan | null>) => {
  if (script === undefined) return geminiEchoScript
  if (typeof script === "function") return script
  const plans = script as ReadonlyArray<GeminiTurnPlan | null>
  let next = 0
  return (ctx) => (next < plans.length ? plans[next++]! : geminiEchoScript(ctx))
}
