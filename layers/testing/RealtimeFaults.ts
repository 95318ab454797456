/**
 * The faults a scripted realtime server injects (`ScriptedRealtime.layer`'s options): rejected
 * updates, dropped connections, failed and stalled responses, turns it cannot transcribe. Each is
 * asked about the nth occurrence of its kind over the model's life, so a test names exactly which
 * one fails; `Plan` keeps those counts, and the functions below say what the server does next.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Cause, Queue } from "effect"
import { RealtimeError, type RealtimeEvent } from "../../services/RealtimeModel.ts"

/**
 * The faults to inject: each predicate is asked about the nth update, response or request
 * (counted over the model's life, from 1), or about a turn's text.
 *
 * @since 0.1.0
 * @category models
 */
export interface Faults {
  /** The nth update (counted over the model's life, from 1) gets an error answer. */
  readonly rejectUpdate?: (n: number, kind: "session" | "context") => boolean
  /**
   * Turns of the user the server fails to transcribe (OpenAI's
   * `input_audio_transcription.failed`): their transcript comes without words. The server still
   * hears them, and answers them by itself.
   */
  readonly untranscribable?: (text: string) => boolean
  /**
   * The nth response (counted over the model's life, from 1) loses its connection after its
   * first text (or as it starts, without text), as a dropped socket does: the events end with a
   * `closed` error and every later operation on that connection fails `closed`.
   */
  readonly dropConnection?: (n: number) => boolean
  /**
   * The nth response (counted as for `dropConnection`) fails on the server after its first text
   * (or as it starts, without text): it ends with status `failed`, as OpenAI's do on a server
   * error. The connection stays usable.
   */
  readonly failResponse?: (n: number) => boolean
  /**
   * The nth response request (counted over the model's life, from 1) is never answered: the
   * server stays busy with it for ever, as a hung one does (a later request on that connection
   * is taken for it, and never answered either).
   */
  readonly stallResponse?: (n: number) => boolean
}

/** The faults and how many updates, responses and requests the model has seen so far. */
export interface Plan {
  readonly faults: Faults
  readonly seen: { updates: number; responses: number; requests: number }
}

export const make = (faults: Faults): Plan => ({ faults, seen: { updates: 0, responses: 0, requests: 0 } })

/** The next update: its number, and whether the server rejects it. */
export const nextUpdate = (plan: Plan, kind: "session" | "context"): { readonly n: number; readonly rejected: boolean } => {
  const n = ++plan.seen.updates
  return { n, rejected: plan.faults.rejectUpdate?.(n, kind) ?? false }
}

/** What happens to the response that just started: it goes through, its connection drops, or it fails. */
export type ResponseFate = "completes" | "drops" | "fails"

export const nextResponse = (plan: Plan): ResponseFate => {
  const n = ++plan.seen.responses
  if (plan.faults.dropConnection?.(n)) return "drops"
  return plan.faults.failResponse?.(n) ? "fails" : "completes"
}

/** Whether the next response request is never answered. */
export const nextRequestStalls = (plan: Plan): boolean => plan.faults.stallResponse?.(++plan.seen.requests) ?? false

export const untranscribable = (plan: Plan, text: string): boolean => plan.faults.untranscribable?.(text) ?? false

/** The connection `events` belong to drops: they end with a `closed` error. (The caller marks it closed.) */
export const dropEvents = (events: Queue.Queue<RealtimeEvent, RealtimeError | Cause.Done>, connectionId: string): void =>
  void Queue.failCauseUnsafe(events, Cause.fail(new RealtimeError({ reason: "closed", message: `${connectionId}: the connection dropped` })))

/** The event a response failed on the server ends with, as OpenAI's does. */
export const failedResponse = (responseId: string): RealtimeEvent => ({
  _tag: "ResponseDone",
  responseId,
  status: "failed",
  error: "The server had an error while processing your request.",
  errorCode: "server_error"
})

/** The effect of a rejected update's answer: its error event, then the ack fails. */
export const rejection = (n: number): { readonly event: RealtimeEvent; readonly error: RealtimeError } => ({
  event: { _tag: "Error", message: `update ${n} rejected`, fatal: false },
  error: new RealtimeError({ reason: "rejected", message: `update ${n} rejected` })
})
