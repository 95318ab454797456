/**
 * Starting a response: `response.create` validation and per-response overrides (instructions,
 * tools, tool_choice, output_modalities, audio.output, metadata, conversation auto|none, input), the
 * one-writer rule of the default conversation, the script call, and the runner's lifecycle
 * (docs/protocols.md 1.3 "response.create per-response overrides").
 */
import { Predicate } from "effect"
import { entryAudioMs, lastUserText } from "./conversation.ts"
import { Errors } from "./errors.ts"
import { ResponseRunner } from "./response.ts"
import { checkFormat, checkModalities, checkToolChoice, checkTools, encodingOf } from "./session.ts"
import type { RealtimeState } from "./state.ts"
import type { AudioFormat, ErrorSpec, RealtimeItem, ResponsePlan, ScriptContext, ScriptTrigger } from "./types.ts"

type Resolved<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly error: ErrorSpec }

const resolveInput = (state: RealtimeState, input: unknown): Resolved<ReadonlyArray<RealtimeItem>> => {
  if (input === undefined) return { ok: true, value: state.conversation.items() }
  if (!Array.isArray(input)) return { ok: false, error: Errors.invalidValue("response.input", input) }
  const out: Array<RealtimeItem> = []
  for (let i = 0; i < input.length; i++) {
    const it: unknown = input[i]
    if (!Predicate.isObject(it)) return { ok: false, error: Errors.invalidValue(`response.input[${i}]`, it) }
    if (it.type === "item_reference") {
      const id = Predicate.isString(it.id) ? it.id : ""
      const entry = state.conversation.get(id)
      if (entry === undefined) return { ok: false, error: Errors.itemNotFound("invalid_value", id, `response.input[${i}].id`) }
      out.push(entry.item)
    } else {
      out.push({ id: `inline_${i}`, object: "realtime.item", ...it } as RealtimeItem)
    }
  }
  return { ok: true, value: out }
}

/**
 * Starts a response. `request` is the `response` object of `response.create` (or the options of a
 * server-initiated one); `plan` bypasses the script. Errors answer `eventId`.
 */
export const startResponse = (
  state: RealtimeState,
  trigger: ScriptTrigger,
  request: unknown,
  eventId: string | null,
  plan?: ResponsePlan
): void => {
  const fail = (error: ErrorSpec) => state.error(error, eventId)
  if (request !== undefined && !Predicate.isObject(request)) return fail(Errors.invalidValue("response", request))
  const req: Readonly<Record<string, unknown>> = request ?? {}
  const mode = req.conversation ?? "auto"
  if (mode !== "auto" && mode !== "none") return fail(Errors.invalidValue("response.conversation", mode, ["auto", "none"]))
  const active = state.defaultResponse
  if (mode === "auto" && active !== undefined) {
    if (trigger === "response.create") return fail(Errors.activeResponse(active.id))
    // A server-initiated response waits for the current writer of the default conversation.
    void active.done.then(() => startResponse(state, trigger, request, eventId, plan))
    return
  }
  const session = state.session
  let modalities = session.output_modalities
  if (req.output_modalities !== undefined) {
    const r = checkModalities(req.output_modalities, "response.output_modalities")
    if (!r.ok) return fail(r.error)
    modalities = r.value
  }
  let tools = session.tools
  if (req.tools !== undefined) {
    const r = checkTools(req.tools, "response.tools")
    if (!r.ok) return fail(r.error)
    tools = r.value
  }
  let toolChoice = session.tool_choice
  if (req.tool_choice !== undefined) {
    const r = checkToolChoice(req.tool_choice, "response.tool_choice")
    if (!r.ok) return fail(r.error)
    toolChoice = r.value
  }
  if (req.instructions !== undefined && !Predicate.isString(req.instructions)) {
    return fail(Errors.invalidValue("response.instructions", req.instructions))
  }
  const instructions = Predicate.isString(req.instructions) ? req.instructions : session.instructions
  const audioOut = Predicate.isObject(req.audio) && Predicate.isObject(req.audio.output) ? req.audio.output : {}
  let format: AudioFormat = session.audio.output.format
  if (audioOut.format !== undefined) {
    const r = checkFormat(audioOut.format, "response.audio.output.format")
    if (!r.ok) return fail(r.error)
    format = r.value
  }
  const metadata = Predicate.isObject(req.metadata) ? (req.metadata as Record<string, string>) : null
  const input = resolveInput(state, req.input)
  if (!input.ok) return fail(input.error)
  const items = input.value
  const runner = new ResponseRunner(state.host, {
    conversation: mode,
    outputModalities: modalities,
    format,
    encoding: encodingOf(format),
    voice: audioOut.voice ?? session.audio.output.voice,
    maxOutputTokens: (req.max_output_tokens as number | "inf" | undefined) ?? session.max_output_tokens,
    metadata,
    inputItems: items,
    inputAudioMs: items.reduce((n, it) => {
      const e = state.conversation.get(it.id)
      return n + (e ? entryAudioMs(e) : 0)
    }, 0),
    instructions
  })
  state.responses.set(runner.id, runner)
  if (mode === "auto") state.defaultResponse = runner
  const ctx: ScriptContext = {
    trigger,
    connection: state.conn.index,
    responseNumber: state.responseCount++,
    session,
    items,
    conversation: state.conversation.items(),
    instructions,
    tools,
    toolChoice,
    outputModalities: modalities,
    conversationMode: mode,
    metadata,
    request: trigger === "response.create" ? req : undefined,
    lastUserText: lastUserText(items, state.conversation),
    lastItem: items.at(-1)
  }
  const release = () => {
    state.responses.delete(runner.id)
    if (state.defaultResponse === runner) state.defaultResponse = undefined
  }
  void (async () => {
    try {
      const chosen = plan ?? (await state.ctx.nextPlan(ctx))
      if (chosen.error !== undefined) {
        release()
        runner.abandon()
        return fail(chosen.error)
      }
      await runner.run(chosen)
    } finally {
      release()
    }
  })().catch((error) => state.conn.guard(() => {
    throw error
  }))
}
