/**
 * Client message handlers of the Gemini Live mock (docs/protocols.md 2.2, 2.3). Violations close the
 * socket with 1007 (invalid argument) or 1008 (policy), as Gemini reports errors (2.9); the reasons
 * are the mock's own wording.
 */
import { Predicate } from "effect"
import { fromBase64 } from "../shared/audio.ts"
import { parseSetup } from "./setup.ts"
import type { GeminiState } from "./state.ts"
import type { Content, FunctionResponse, GeminiClientMessage, Part } from "./types.ts"

const obj = (v: unknown): Readonly<Record<string, unknown>> => (Predicate.isObject(v) ? v : {})

export const dispatch = (s: GeminiState, m: GeminiClientMessage, type: string): void => {
  if (type === "setup") return setup(s, m.setup)
  if (s.setup === undefined) return s.fail({ code: 1007, reason: "The first message must be a setup message." })
  if (type === "clientContent") return clientContent(s, obj(m.clientContent))
  if (type === "toolResponse") return toolResponse(s, obj(m.toolResponse))
  return realtimeInput(s, type, obj(m.realtimeInput))
}

const setup = (s: GeminiState, raw: unknown): void => {
  if (s.setup !== undefined) return s.fail({ code: 1007, reason: "Only one setup message is allowed per connection." })
  const { options, store } = s.ctx
  const r = parseSetup(raw, options)
  if (!r.ok) return s.fail(r.close)
  const handle = r.info.resumption?.handle
  if (handle !== undefined) {
    const snapshot = store.get(handle)
    if (snapshot === undefined) return s.fail({ code: 1007, reason: "Invalid or expired session resumption handle." })
    if (snapshot.model !== r.info.model) return s.fail({ code: 1007, reason: "The model cannot change when resuming a session." })
    s.history = [...snapshot.history]
    s.modelTurns = snapshot.modelTurns
    s.resumed = true
  }
  s.setup = r.info
  s.emit({ setupComplete: {} })
  if (options.lifetime !== undefined) {
    const { goAwayAfterMs, timeLeftMs = 1000 } = options.lifetime
    s.conn.later(goAwayAfterMs, () => s.goAway(timeLeftMs, timeLeftMs, 1000, ""))
  }
}

const clientContent = (s: GeminiState, cc: Readonly<Record<string, unknown>>): void => {
  const setupInfo = s.setup!
  const turns = cc.turns ?? []
  if (!Array.isArray(turns)) return s.fail({ code: 1007, reason: "Invalid clientContent: 'turns' must be a list." })
  const contents: Array<Content> = []
  for (const t of turns as Array<unknown>) {
    const role = obj(t).role
    if (role !== undefined && role !== "user" && role !== "model") {
      return s.fail({ code: 1007, reason: "Please use a valid role: user, model." })
    }
    const parts = obj(t).parts
    if (!Array.isArray(parts)) return s.fail({ code: 1007, reason: "Invalid clientContent: every turn needs 'parts'." })
    contents.push({ ...(role === undefined ? {} : { role }), parts: parts as Array<Part> })
  }
  if (setupInfo.family31 && s.modelTurns > 0) {
    return s.fail({ code: 1007, reason: "clientContent is only accepted as initial history on this model; use realtimeInput.text." })
  }
  // "a message here will interrupt any current model generation"
  s.interrupt()
  for (const content of contents) s.history.push({ content })
  if (cc.turnComplete !== true) return
  if (setupInfo.historyInClientContent && s.modelTurns === 0) return // history seeding never calls the model
  s.startTurn("clientContent")
}

const realtimeInput = (s: GeminiState, type: string, ri: Readonly<Record<string, unknown>>): void => {
  const setupInfo = s.setup!
  switch (type) {
    case "realtimeInput.audio":
      return audioBlob(s, ri.audio)
    case "realtimeInput.mediaChunks":
      for (const blob of Array.isArray(ri.mediaChunks) ? (ri.mediaChunks as Array<unknown>) : []) {
        if (Predicate.isString(obj(blob).mimeType) && (obj(blob).mimeType as string).startsWith("audio/")) audioBlob(s, blob)
      }
      return
    case "realtimeInput.text": {
      if (!Predicate.isString(ri.text)) return s.fail({ code: 1007, reason: "Invalid realtimeInput: 'text' must be a string." })
      if (setupInfo.interrupts) s.interrupt()
      s.history.push({ content: { role: "user", parts: [{ text: ri.text }] } })
      return s.startTurn("realtimeInput")
    }
    case "realtimeInput.activityStart":
    case "realtimeInput.activityEnd":
      if (setupInfo.aad) {
        return s.fail({ code: 1007, reason: "Explicit activity control is not allowed when automatic activity detection is enabled." })
      }
      return type === "realtimeInput.activityStart" ? s.input.activityStart() : s.input.activityEnd()
    case "realtimeInput.audioStreamEnd":
      return s.input.audioStreamEnd()
    default:
      return // video and unknown realtime inputs are recorded only
  }
}

const audioBlob = (s: GeminiState, blob: unknown): void => {
  const b = obj(blob)
  const mime = Predicate.isString(b.mimeType) ? b.mimeType : ""
  if (!mime.startsWith("audio/pcm") || !Predicate.isString(b.data)) {
    return s.fail({ code: 1007, reason: `Unsupported audio input: '${mime}'. Send audio/pcm (16-bit little-endian).` })
  }
  const rate = Number(/rate=(\d+)/.exec(mime)?.[1] ?? 16000)
  s.input.audio(fromBase64(b.data), rate)
}

const toolResponse = (s: GeminiState, tr: Readonly<Record<string, unknown>>): void => {
  const list = tr.functionResponses
  if (!Array.isArray(list)) return s.fail({ code: 1007, reason: "Invalid toolResponse: 'functionResponses' must be a list." })
  const matched: Array<FunctionResponse> = []
  let scheduling: string | undefined
  let answeredBlocking = false
  for (const raw of list as Array<unknown>) {
    const fr = obj(raw) as FunctionResponse
    const key = fr.id !== undefined ? fr.id : `name:${fr.name ?? ""}`
    const call = s.pending.get(key)
    if (call === undefined) {
      s.unmatchedResponses.push(fr)
      continue
    }
    if (fr.willContinue !== true) s.pending.delete(key)
    matched.push(fr)
    s.history.push({ content: { role: "user", parts: [{ functionResponse: fr }] } })
    if (call.blocking) answeredBlocking = true
    else scheduling = fr.scheduling ?? (obj(fr.response).scheduling as string | undefined) ?? "WHEN_IDLE"
  }
  if (matched.length === 0) return
  const blockingLeft = [...s.pending.values()].some((p) => p.blocking)
  if (s.awaitingTools && answeredBlocking) {
    if (blockingLeft) return
    s.awaitingTools = false
    return s.startTurn("toolResponse", matched) // the model continues by itself (no response.create)
  }
  if (scheduling === "SILENT") return
  if (scheduling === "INTERRUPT") s.interrupt()
  s.startTurn("toolResponse", matched)
}
