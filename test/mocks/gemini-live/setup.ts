/**
 * The `setup` message: validation and the settings derived from it (docs/protocols.md 2.2), and the
 * session resumption store (2.8). Tools and system instruction are fixed by `setup` for the whole
 * connection (2.7); only a reconnect with a resumption handle may change them.
 */
import { Predicate } from "effect"
import { makeId } from "../shared/ids.ts"
import type { CloseSpec, Content, FunctionDeclaration, GeminiLiveMockOptions } from "./types.ts"

export interface SetupInfo {
  readonly raw: Readonly<Record<string, unknown>>
  readonly model: string
  readonly responseModalities: ReadonlyArray<string>
  readonly systemInstruction: string
  readonly tools: ReadonlyArray<FunctionDeclaration>
  /** Automatic activity detection (server VAD) enabled (default true). */
  readonly aad: boolean
  readonly interrupts: boolean
  readonly silenceMs: number
  readonly inputTranscription: boolean
  readonly outputTranscription: boolean
  readonly resumption: { readonly handle: string | undefined; readonly transparent: boolean } | undefined
  readonly historyInClientContent: boolean
  /** Gemini 3.1 family: clientContent only seeds history; multi-part messages. */
  readonly family31: boolean
}

export interface HistoryEntry {
  readonly content: Content
  /** What user audio said (input transcription or the `userSpeaks` transcript). */
  readonly transcript?: string | undefined
}

const invalid = (reason: string): CloseSpec => ({ code: 1007, reason })

const obj = (v: unknown): Readonly<Record<string, unknown>> => (Predicate.isObject(v) ? v : {})

export const instructionText = (v: unknown): string => {
  if (Predicate.isString(v)) return v
  const parts = obj(v).parts
  return Array.isArray(parts) ? parts.map((p: unknown) => (Predicate.isString(obj(p).text) ? obj(p).text : "")).join("") : ""
}

export const parseSetup = (
  raw: unknown,
  options: GeminiLiveMockOptions
): { readonly ok: true; readonly info: SetupInfo } | { readonly ok: false; readonly close: CloseSpec } => {
  if (!Predicate.isObject(raw)) return { ok: false, close: invalid("Invalid setup: expected an object.") }
  const model = raw.model
  if (!Predicate.isString(model) || model.length === 0) {
    return { ok: false, close: invalid("Invalid setup: 'model' is required.") }
  }
  // `models/` is the canonical prefix (what @google/genai sends); a bare name means the same model.
  const bare = (name: string) => name.replace(/^models\//, "")
  if (options.knownModels !== undefined && !options.knownModels.some((known) => bare(known) === bare(model))) {
    return {
      ok: false,
      close: {
        code: 1008,
        reason: `${model} is not found for API version v1beta, or is not supported for bidiGenerateContent.`
      }
    }
  }
  const gen = obj(raw.generationConfig)
  const modalities = Array.isArray(gen.responseModalities) ? (gen.responseModalities as Array<string>) : ["AUDIO"]
  if (modalities.length !== 1 || (modalities[0] !== "AUDIO" && modalities[0] !== "TEXT")) {
    return { ok: false, close: invalid("Invalid setup: responseModalities must be [\"AUDIO\"] or [\"TEXT\"].") }
  }
  if (modalities[0] === "TEXT" && model.includes("native-audio")) {
    return { ok: false, close: invalid("Invalid setup: native audio models only support the AUDIO response modality.") }
  }
  const tools: Array<FunctionDeclaration> = []
  if (raw.tools !== undefined) {
    if (!Array.isArray(raw.tools)) return { ok: false, close: invalid("Invalid setup: 'tools' must be a list.") }
    for (const t of raw.tools as Array<unknown>) {
      const decls = obj(t).functionDeclarations
      if (Array.isArray(decls)) {
        for (const d of decls as Array<unknown>) {
          if (!Predicate.isString(obj(d).name)) {
            return { ok: false, close: invalid("Invalid setup: a function declaration has no name.") }
          }
          const parameters = obj(d).parameters
          if (parameters !== undefined) {
            const p = obj(parameters)
            if (p.type !== "OBJECT") {
              return { ok: false, close: invalid(`Invalid setup: function '${String(obj(d).name)}': parameters must have type OBJECT.`) }
            }
            const fault = schemaFault(p, `setup.tools[0].function_declarations[${tools.length}].parameters`)
            if (fault !== undefined) return { ok: false, close: invalid(fault) }
          }
          tools.push(d as FunctionDeclaration)
        }
      }
    }
  }
  const rtc = obj(raw.realtimeInputConfig)
  const aad = obj(rtc.automaticActivityDetection)
  const resumption = raw.sessionResumption === undefined ? undefined : obj(raw.sessionResumption)
  return {
    ok: true,
    info: {
      raw,
      model,
      responseModalities: modalities,
      systemInstruction: instructionText(raw.systemInstruction),
      tools,
      aad: aad.disabled !== true,
      interrupts: rtc.activityHandling !== "NO_INTERRUPTION",
      silenceMs: Predicate.isNumber(aad.silenceDurationMs) ? aad.silenceDurationMs : 800,
      inputTranscription: raw.inputAudioTranscription !== undefined,
      outputTranscription: raw.outputAudioTranscription !== undefined,
      resumption: resumption === undefined
        ? undefined
        : {
          handle: Predicate.isString(resumption.handle) && resumption.handle.length > 0 ? resumption.handle : undefined,
          transparent: resumption.transparent === true
        },
      historyInClientContent: obj(raw.historyConfig).initialHistoryInClientContent === true,
      family31: model.includes("3.1")
    }
  }
}

export interface Snapshot {
  readonly model: string
  readonly history: ReadonlyArray<HistoryEntry>
  readonly modelTurns: number
}

/** Resumption handles issued by one server, valid across its connections. */
export class ResumptionStore {
  private readonly snapshots = new Map<string, Snapshot>()

  save(snapshot: Snapshot): string {
    const handle = makeId("handle")
    this.snapshots.set(handle, snapshot)
    return handle
  }

  get(handle: string): Snapshot | undefined {
    return this.snapshots.get(handle)
  }

  /** Makes one handle (or all) invalid, like an expired token. */
  invalidate(handle?: string): void {
    if (handle === undefined) this.snapshots.clear()
    else this.snapshots.delete(handle)
  }

  handles(): ReadonlyArray<string> {
    return [...this.snapshots.keys()]
  }
}

/** The fields of Gemini's `Schema` (an OpenAPI 3.0 subset); anything else is an unknown name. */
const SCHEMA_FIELDS = new Set([
  "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties", "required",
  "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf", "propertyOrdering",
  "default", "items", "minimum", "maximum"
])
const SCHEMA_TYPES = new Set(["STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"])

/** What Gemini says about a function's parameters schema, the way it says it; none when valid. */
export const schemaFault = (schema: Record<string, unknown>, at: string): string | undefined => {
  for (const key of Object.keys(schema)) {
    if (!SCHEMA_FIELDS.has(key)) return `Invalid JSON payload received. Unknown name "${key}" at '${at}': Cannot find field.`
  }
  if (schema.type !== undefined && !(typeof schema.type === "string" && SCHEMA_TYPES.has(schema.type))) {
    return `Invalid JSON payload received. Invalid value at '${at}.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), ${JSON.stringify(schema.type)}`
  }
  if (schema.type === undefined && schema.anyOf === undefined) return `* ${at}.type: must be specified`
  if (schema.type === "OBJECT") {
    const properties = obj(schema.properties)
    if (Object.keys(properties).length === 0) return `* ${at}.properties: should be non-empty for OBJECT type`
    for (const [name, value] of Object.entries(properties)) {
      const fault = schemaFault(obj(value), `${at}.properties[${JSON.stringify(name)}].value`)
      if (fault !== undefined) return fault
    }
    for (const name of Array.isArray(schema.required) ? schema.required : []) {
      if (!(String(name) in properties)) return `* ${at}.required[${String(name)}]: property is not defined`
    }
  }
  if (schema.type === "ARRAY") {
    if (schema.items === undefined) return `* ${at}.items: missing field`
    const fault = schemaFault(obj(schema.items), `${at}.items`)
    if (fault !== undefined) return fault
  }
  if (schema.enum !== undefined && !(Array.isArray(schema.enum) && schema.enum.every((v) => typeof v === "string"))) {
    return `Invalid JSON payload received. Invalid value at '${at}.enum': enum values must be strings`
  }
  for (const [i, variant] of (Array.isArray(schema.anyOf) ? schema.anyOf : []).entries()) {
    const fault = schemaFault(obj(variant), `${at}.any_of[${i}]`)
    if (fault !== undefined) return fault
  }
  return undefined
}
