/**
 * What the Gemini Live client does with each server message (docs/protocols.md 2.4, 2.5): it turns
 * `serverContent` into baton events and keeps the conversation history.
 *
 * - A model turn has no id on the wire: the client numbers them. Its first content
 *   (`modelTurn` parts, `outputTranscription`, `toolCall`) emits `ResponseStarted`; audio parts
 *   are `AudioDelta` (24 kHz, or the rate of the MIME type), text parts `TextDelta` (thoughts
 *   are skipped), output transcription `TranscriptDelta`.
 * - `turnComplete` ends the turn: `ResponseDone` (`cancelled` after `interrupted`, with the last
 *   `usageMetadata`). A `toolCall` also ends it (`FunctionCall` events, then `ResponseDone`):
 *   the server continues by itself after the `toolResponse`, in a new response.
 * - `interrupted` emits `Interrupted`; input transcription chunks are `InputTranscript`s, final
 *   when `finished` or when the model starts answering.
 * - `toolCallCancellation` marks calls whose outputs must no longer be sent (debug log).
 * - `goAway` emits `GoAway` and asks the connection to move to a new socket;
 *   `sessionResumptionUpdate` keeps the newest resumable handle.
 */
import { Deferred, Effect } from "effect"
import type { RealtimeEvent, Usage } from "../../services/RealtimeModel.ts"
import type { GeminiHistory } from "./GeminiHistory.ts"
import { durationMs, rateOf, type ServerMessage } from "./GeminiWire.ts"

/** One WebSocket of a connection, as the handler sees it. */
export interface LiveSocket {
  readonly socketId: number
  /** `setupComplete` arrived. */
  readonly setupComplete: Deferred.Deferred<void>
  /** `goAway` arrived (time left, in ms). */
  readonly goAway: Deferred.Deferred<number>
}

export interface Turn {
  readonly responseId: string
  readonly itemId: string
  text: string
  interrupted: boolean
}

export interface HandlerState {
  turn: Turn | undefined
  turns: number
  /** The user utterance being transcribed. */
  user: { readonly itemId: string; text: string } | undefined
  users: number
  usage: Usage | undefined
  handle: string | undefined
  readonly pendingCalls: Set<string>
  readonly cancelledCalls: Set<string>
}

export const makeHandlerState = (): HandlerState => ({
  turn: undefined,
  turns: 0,
  user: undefined,
  users: 0,
  usage: undefined,
  handle: undefined,
  pendingCalls: new Set(),
  cancelledCalls: new Set()
})

/** Numbers connections, so item ids stay unique across them (they key the chat context). */
let handlerCount = 0

export const makeHandler = (options: {
  readonly state: HandlerState
  readonly history: GeminiHistory
  readonly emit: (event: RealtimeEvent) => Effect.Effect<void>
}) => {
  const { emit, history, state } = options
  let callSeq = 0
  const tag = (++handlerCount).toString(36)

  const finishUser = Effect.suspend(() => {
    const user = state.user
    if (user === undefined) return Effect.void
    state.user = undefined
    history.push({ id: user.itemId, origin: "server", kind: "message", role: "user", text: user.text, content: { role: "user", parts: [{ text: user.text }] } })
    return emit({ _tag: "InputTranscript", itemId: user.itemId, text: user.text, final: true })
  })

  const ensureTurn = Effect.gen(function*() {
    if (state.turn !== undefined) return state.turn
    yield* finishUser
    const n = ++state.turns
    const turn: Turn = { responseId: `gemini_${tag}_resp_${n}`, itemId: `gemini_${tag}_item_${n}`, text: "", interrupted: false }
    state.turn = turn
    yield* emit({ _tag: "ResponseStarted", responseId: turn.responseId })
    return turn
  })

  const endTurn = (status: "completed" | "cancelled" | "incomplete") =>
    Effect.gen(function*() {
      const turn = state.turn
      if (turn === undefined) return
      state.turn = undefined
      if (turn.text !== "") {
        history.push({
          id: turn.itemId,
          origin: "server",
          kind: "message",
          role: "model",
          text: turn.text,
          content: { role: "model", parts: [{ text: turn.text }] }
        })
      }
      const usage = state.usage
      state.usage = undefined
      yield* emit({ _tag: "ResponseDone", responseId: turn.responseId, status, usage })
    })

  /** Handles one message from `live`. */
  const handle = (live: LiveSocket, message: ServerMessage) =>
    Effect.gen(function*() {
      if (message.setupComplete !== undefined && message.setupComplete !== null) {
        yield* Deferred.succeed(live.setupComplete, undefined)
      }
      if (message.usageMetadata) {
        state.usage = {
          inputTokens: message.usageMetadata.promptTokenCount ?? 0,
          outputTokens: message.usageMetadata.responseTokenCount ?? 0
        }
      }
      const content = message.serverContent
      if (content) {
        if (content.interrupted) {
          if (state.turn !== undefined) {
            state.turn.interrupted = true
            yield* emit({ _tag: "Interrupted", responseId: state.turn.responseId })
          } else {
            yield* Effect.logDebug("gemini: interrupted with no model turn in progress")
          }
        }
        const input = content.inputTranscription
        if (input && (input.text ?? "") !== "") {
          const user = state.user ?? { itemId: `gemini_${tag}_user_${++state.users}`, text: "" }
          state.user = user
          user.text += input.text ?? ""
          if (input.finished) yield* finishUser
          else yield* emit({ _tag: "InputTranscript", itemId: user.itemId, text: user.text, final: false })
        }
        for (const part of content.modelTurn?.parts ?? []) {
          if (part.thought) continue
          const data = part.inlineData?.data
          if (data !== undefined && data !== null && (part.inlineData?.mimeType ?? "audio/pcm").startsWith("audio/")) {
            const turn = yield* ensureTurn
            yield* emit({
              _tag: "AudioDelta",
              responseId: turn.responseId,
              itemId: turn.itemId,
              pcm: new Uint8Array(Buffer.from(data, "base64")),
              sampleRate: rateOf(part.inlineData?.mimeType, 24_000)
            })
          } else if (part.text !== undefined && part.text !== null && part.text !== "") {
            const turn = yield* ensureTurn
            turn.text += part.text
            yield* emit({ _tag: "TextDelta", responseId: turn.responseId, itemId: turn.itemId, delta: part.text })
          }
        }
        const output = content.outputTranscription?.text
        if (output !== undefined && output !== null && output !== "") {
          const turn = yield* ensureTurn
          turn.text += output
          yield* emit({ _tag: "TranscriptDelta", responseId: turn.responseId, itemId: turn.itemId, delta: output })
        }
        if (input?.finished && (input.text ?? "") === "") yield* finishUser
        if (content.turnComplete) {
          yield* finishUser
          yield* endTurn(state.turn?.interrupted ? "cancelled" : "completed")
        }
      }
      const calls = message.toolCall?.functionCalls ?? []
      if (calls.length > 0) {
        const turn = yield* ensureTurn
        for (const call of calls) {
          const callId = call.id ?? `gemini_call_${++callSeq}`
          const args = JSON.stringify(call.args ?? {})
          state.pendingCalls.add(callId)
          history.push({
            id: `gemini_fc_${callId}`,
            origin: "server",
            kind: "call",
            role: "model",
            text: "",
            callId,
            content: { role: "model", parts: [{ functionCall: { id: callId, name: call.name, args: call.args ?? {} } }] }
          })
          yield* emit({ _tag: "FunctionCall", responseId: turn.responseId, itemId: `gemini_fc_${callId}`, callId, name: call.name, arguments: args })
        }
        yield* endTurn("completed")
      }
      for (const id of message.toolCallCancellation?.ids ?? []) {
        state.pendingCalls.delete(id)
        state.cancelledCalls.add(id)
        yield* Effect.logDebug(`gemini: the server cancelled tool call ${id}; its output will not be sent`)
      }
      const resumption = message.sessionResumptionUpdate
      if (resumption?.resumable && resumption.newHandle) state.handle = resumption.newHandle
      if (message.goAway) {
        const timeLeftMs = durationMs(message.goAway.timeLeft)
        yield* emit({ _tag: "GoAway", timeLeftMs })
        yield* Deferred.succeed(live.goAway, timeLeftMs)
      }
    })

  return { handle, endTurn }
}
