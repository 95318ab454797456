/**
 * Session config state: the `session.created` defaults and `session.update` (validation and merge).
 * Facts: docs/protocols.md 1.2 (field facts, update semantics, mutability table) and 1.4 A.
 */
import { Predicate } from "effect"
import type { AudioEncoding } from "../shared/audio.ts"
import { makeId } from "../shared/ids.ts"
import { Errors } from "./errors.ts"
import type { AudioFormat, ErrorSpec, FunctionTool, SessionConfig, ToolChoice, TurnDetection } from "./types.ts"

export const VOICES = ["alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar"]

const SESSION_KEYS = new Set([
  "type", "model", "instructions", "output_modalities", "audio", "tools", "tool_choice", "max_output_tokens",
  "tracing", "truncation", "prompt", "include", "reasoning", "parallel_tool_calls",
  // echoed back from session.created by some clients; ignored
  "object", "id", "expires_at"
])
const AUDIO_INPUT_KEYS = new Set(["format", "transcription", "noise_reduction", "turn_detection"])
const AUDIO_OUTPUT_KEYS = new Set(["format", "voice", "speed"])

const PCM24: AudioFormat = { type: "audio/pcm", rate: 24000 }

/** `session.created` defaults (OA-REF example: server_vad with silence_duration_ms 200, voice marin). */
export const defaultSession = (model: string, instructions: string, expiresAt: number): SessionConfig => ({
  type: "realtime",
  object: "realtime.session",
  id: makeId("sess"),
  model,
  output_modalities: ["audio"],
  instructions,
  tools: [],
  tool_choice: "auto",
  max_output_tokens: "inf",
  tracing: null,
  truncation: "auto",
  prompt: null,
  include: null,
  expires_at: expiresAt,
  audio: {
    input: {
      format: PCM24,
      transcription: null,
      noise_reduction: null,
      turn_detection: {
        type: "server_vad",
        threshold: 0.5,
        prefix_padding_ms: 300,
        silence_duration_ms: 200,
        idle_timeout_ms: null,
        create_response: true,
        interrupt_response: true
      }
    },
    output: { format: PCM24, voice: "marin", speed: 1 }
  }
})

type Check<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly error: ErrorSpec }
const ok = <A>(value: A): Check<A> => ({ ok: true, value })
const bad = (error: ErrorSpec): Check<never> => ({ ok: false, error })

export const checkFormat = (value: unknown, param: string): Check<AudioFormat> => {
  if (!Predicate.isObject(value)) return bad(Errors.invalidValue(param, value))
  if (value.type === "audio/pcm") {
    if (value.rate !== undefined && value.rate !== 24000) return bad(Errors.invalidValue(`${param}.rate`, value.rate, ["24000"]))
    return ok(PCM24)
  }
  if (value.type === "audio/pcmu" || value.type === "audio/pcma") return ok({ type: value.type })
  return bad(Errors.invalidValue(`${param}.type`, value.type, ["audio/pcm", "audio/pcmu", "audio/pcma"]))
}

export const checkModalities = (value: unknown, param: string): Check<ReadonlyArray<"audio" | "text">> => {
  if (Array.isArray(value) && value.length === 1 && (value[0] === "audio" || value[0] === "text")) {
    return ok([value[0]])
  }
  return bad(Errors.invalidValue(param, value, ["audio", "text"]))
}

/** Accepts the GA object form and bare strings (LiveKit JS sends a bare function name). */
/** `none`, `auto`, `required` or an object (docs/protocols.md 1.2); a bare function name is refused. */
export const checkToolChoice = (value: unknown, param: string): Check<ToolChoice> => {
  if (value === "none" || value === "auto" || value === "required") return ok(value)
  if (Predicate.isObject(value)) {
    if (value.type === "function" && Predicate.isString(value.name)) return ok({ type: "function", name: value.name })
    if (value.type === "mcp" && Predicate.isString(value.server_label)) return ok(value as ToolChoice)
  }
  return bad(Errors.invalidValue(param, value, ["none", "auto", "required"]))
}

export const checkTools = (value: unknown, param: string): Check<ReadonlyArray<FunctionTool>> => {
  if (!Array.isArray(value)) return bad(Errors.invalidValue(param, value))
  for (let i = 0; i < value.length; i++) {
    const t: unknown = value[i]
    if (!Predicate.isObject(t)) return bad(Errors.invalidValue(`${param}[${i}]`, t))
    if (t.type === "function" && !Predicate.isString(t.name)) return bad(Errors.missingParameter(`${param}[${i}].name`))
    if (t.type !== "function" && t.type !== "mcp") return bad(Errors.invalidValue(`${param}[${i}].type`, t.type, ["function", "mcp"]))
    const parameters = t.type === "function" ? t.parameters : undefined
    if (parameters !== undefined && !(Predicate.isObject(parameters) && parameters.type === "object")) {
      const got = Predicate.isObject(parameters) && Predicate.isString(parameters.type) ? parameters.type : "None"
      return bad(Errors.constraint(
        `${param}[${i}].parameters`,
        `Invalid schema for function '${String(t.name)}': schema must be a JSON Schema of 'type: "object"', got 'type: "${got}"'.`
      ))
    }
  }
  return ok(value as ReadonlyArray<FunctionTool>)
}

const checkTurnDetection = (value: unknown, param: string): Check<TurnDetection | null> => {
  if (value === null) return ok(null)
  if (!Predicate.isObject(value)) return bad(Errors.invalidValue(param, value))
  const common = {
    create_response: value.create_response === undefined ? true : value.create_response === true,
    interrupt_response: value.interrupt_response === undefined ? true : value.interrupt_response === true
  }
  if (value.type === "server_vad") {
    const threshold = value.threshold ?? 0.5
    if (!Predicate.isNumber(threshold) || threshold < 0 || threshold > 1) {
      return bad(Errors.constraint(`${param}.threshold`, "threshold must be between 0 and 1."))
    }
    return ok({
      type: "server_vad",
      threshold,
      prefix_padding_ms: Predicate.isNumber(value.prefix_padding_ms) ? value.prefix_padding_ms : 300,
      silence_duration_ms: Predicate.isNumber(value.silence_duration_ms) ? value.silence_duration_ms : 500,
      idle_timeout_ms: Predicate.isNumber(value.idle_timeout_ms) ? value.idle_timeout_ms : null,
      ...common
    })
  }
  if (value.type === "semantic_vad") {
    const eagerness = value.eagerness ?? "auto"
    if (eagerness !== "low" && eagerness !== "medium" && eagerness !== "high" && eagerness !== "auto") {
      return bad(Errors.invalidValue(`${param}.eagerness`, eagerness, ["low", "medium", "high", "auto"]))
    }
    return ok({ type: "semantic_vad", eagerness, ...common })
  }
  return bad(Errors.invalidValue(`${param}.type`, value.type, ["server_vad", "semantic_vad"]))
}

const unknownKey = (obj: object, known: Set<string>, prefix: string): string | undefined => {
  const key = Object.keys(obj).find((k) => !known.has(k))
  return key === undefined ? undefined : `${prefix}.${key}`
}

export interface UpdateContext {
  /** Assistant audio has been produced: `voice` is frozen (docs/protocols.md 1.2). */
  readonly assistantAudioPresent: boolean
}

/**
 * Applies a `session.update`. Only the fields present change; any invalid field rejects the whole
 * update (no `session.updated`).
 */
export const applySessionUpdate = (current: SessionConfig, patch: unknown, ctx: UpdateContext): Check<SessionConfig> => {
  if (!Predicate.isObject(patch)) return bad(Errors.missingParameter("session"))
  if (patch.type === undefined) return bad(Errors.missingParameter("session.type"))
  if (patch.type !== "realtime" && patch.type !== "transcription") {
    return bad(Errors.invalidValue("session.type", patch.type, ["realtime", "transcription"]))
  }
  if (patch.type !== current.type) return bad(Errors.constraint("session.type", "The session type cannot be changed."))
  const stray = unknownKey(patch, SESSION_KEYS, "session")
  if (stray) return bad(Errors.unknownParameter(stray))
  let next: SessionConfig = current
  if (patch.model !== undefined && patch.model !== current.model) {
    return bad(Errors.constraint("session.model", "The model of a session cannot be changed."))
  }
  if (patch.instructions !== undefined) {
    if (!Predicate.isString(patch.instructions)) return bad(Errors.invalidValue("session.instructions", patch.instructions))
    next = { ...next, instructions: patch.instructions }
  }
  if (patch.output_modalities !== undefined) {
    const r = checkModalities(patch.output_modalities, "session.output_modalities")
    if (!r.ok) return r
    next = { ...next, output_modalities: r.value }
  }
  if (patch.tools !== undefined) {
    const r = checkTools(patch.tools, "session.tools")
    if (!r.ok) return r
    next = { ...next, tools: r.value }
  }
  if (patch.tool_choice !== undefined) {
    const r = checkToolChoice(patch.tool_choice, "session.tool_choice")
    if (!r.ok) return r
    next = { ...next, tool_choice: r.value }
  }
  if (patch.max_output_tokens !== undefined) {
    const m = patch.max_output_tokens
    if (m !== "inf" && !(Predicate.isNumber(m) && Number.isInteger(m) && m >= 1 && m <= 4096)) {
      return bad(Errors.constraint("session.max_output_tokens", "max_output_tokens must be an integer between 1 and 4096, or 'inf'."))
    }
    next = { ...next, max_output_tokens: m }
  }
  if (patch.tracing !== undefined) {
    if (current.tracing !== null && JSON.stringify(patch.tracing) !== JSON.stringify(current.tracing)) {
      return bad(Errors.constraint("session.tracing", "Once tracing is enabled for a session, the configuration cannot be modified."))
    }
    next = { ...next, tracing: patch.tracing }
  }
  if (patch.truncation !== undefined) next = { ...next, truncation: patch.truncation }
  if (patch.prompt !== undefined) next = { ...next, prompt: patch.prompt }
  if (patch.include !== undefined) next = { ...next, include: patch.include }
  if (patch.audio !== undefined) {
    const r = applyAudio(next, patch.audio, ctx)
    if (!r.ok) return r
    next = r.value
  }
  return ok(next)
}

const applyAudio = (current: SessionConfig, audio: unknown, ctx: UpdateContext): Check<SessionConfig> => {
  if (!Predicate.isObject(audio)) return bad(Errors.invalidValue("session.audio", audio))
  const stray = unknownKey(audio, new Set(["input", "output"]), "session.audio")
  if (stray) return bad(Errors.unknownParameter(stray))
  let input = current.audio.input
  let output = current.audio.output
  if (audio.input !== undefined) {
    const inp = audio.input
    if (!Predicate.isObject(inp)) return bad(Errors.invalidValue("session.audio.input", inp))
    const s = unknownKey(inp, AUDIO_INPUT_KEYS, "session.audio.input")
    if (s) return bad(Errors.unknownParameter(s))
    if (inp.format !== undefined) {
      const r = checkFormat(inp.format, "session.audio.input.format")
      if (!r.ok) return r
      input = { ...input, format: r.value }
    }
    if (inp.transcription !== undefined) {
      const t = inp.transcription
      if (t !== null && !(Predicate.isObject(t) && Predicate.isString(t.model))) {
        return bad(Errors.missingParameter("session.audio.input.transcription.model"))
      }
      input = { ...input, transcription: t as SessionConfig["audio"]["input"]["transcription"] }
    }
    if (inp.noise_reduction !== undefined) {
      input = { ...input, noise_reduction: inp.noise_reduction as { type: string } | null }
    }
    if (inp.turn_detection !== undefined) {
      const r = checkTurnDetection(inp.turn_detection, "session.audio.input.turn_detection")
      if (!r.ok) return r
      input = { ...input, turn_detection: r.value }
    }
  }
  if (audio.output !== undefined) {
    const out = audio.output
    if (!Predicate.isObject(out)) return bad(Errors.invalidValue("session.audio.output", out))
    const s = unknownKey(out, AUDIO_OUTPUT_KEYS, "session.audio.output")
    if (s) return bad(Errors.unknownParameter(s))
    if (out.format !== undefined) {
      const r = checkFormat(out.format, "session.audio.output.format")
      if (!r.ok) return r
      output = { ...output, format: r.value }
    }
    if (out.voice !== undefined) {
      const v = out.voice
      const valid = (Predicate.isString(v) && VOICES.includes(v)) || (Predicate.isObject(v) && Predicate.isString(v.id))
      if (!valid) return bad(Errors.invalidValue("session.audio.output.voice", v, VOICES))
      if (JSON.stringify(v) !== JSON.stringify(output.voice) && ctx.assistantAudioPresent) {
        return bad(Errors.cannotUpdateVoice())
      }
      output = { ...output, voice: v as string | { id: string } }
    }
    if (out.speed !== undefined) {
      if (!Predicate.isNumber(out.speed) || out.speed < 0.25 || out.speed > 1.5) {
        return bad(Errors.constraint("session.audio.output.speed", "speed must be between 0.25 and 1.5."))
      }
      output = { ...output, speed: out.speed }
    }
  }
  return ok({ ...current, audio: { input, output } })
}

export const encodingOf = (format: AudioFormat): AudioEncoding =>
  format.type === "audio/pcm" ? { kind: "pcm16", rate: 24000 } : { kind: format.type === "audio/pcmu" ? "pcmu" : "pcma" }

/** Silence that ends a turn: server_vad's setting; semantic_vad is approximated as 500 ms [mock]. */
export const vadSilenceMs = (td: TurnDetection): number =>
  td.type === "server_vad" ? td.silence_duration_ms ?? 500 : 500

/** RMS threshold of the mock's energy VAD: `threshold * 0.05` of full scale [mock]. */
export const vadThresholdRms = (td: TurnDetection): number => (td.threshold ?? 0.5) * 0.05
