/**
 * The ledger of one realtime connection, pure bookkeeping that decides which lease an event is
 * for (docs/rules.md, rules 7 and 8): who asked for each response not started yet (the server
 * answers in order), which response the server is generating, and whether its asker still wants
 * it. `track` reads one server event against it and says what to do: deliver the event to the
 * holder, drop it, cancel a response no one wants, wake those waiting for the server to be idle.
 * The lease's operations (Lease.ts) and the connection's router (Connection.ts) do the effects.
 */
import type { RealtimeEvent } from "../../../services/RealtimeModel.ts"

/** One response asked for: `owner` is the lease that asked; `abandoned` once no one wants it. */
export interface Ticket {
  readonly owner: object
  abandoned: boolean
}

/** An event as the lease delivers it: a response's start names the ticket that asked for it
 * (none when the server started it by itself). */
export type LeaseEvent = RealtimeEvent & { readonly ticket?: Ticket | undefined }

/** The responses of one connection, as far as this side knows them. */
export interface Ledger {
  /** Who asked for each response not started yet, in order (the server answers in order). */
  readonly requests: Array<Ticket>
  /** The response the server is generating, and whether its asker still wants it. */
  active: { readonly id: string; stale: boolean } | undefined
}

export const ledger = (): Ledger => ({ requests: [], active: undefined })

/** What to do with one server event. */
export interface Verdict {
  /** The event for the holder; undefined: dropped (a stale response's). */
  readonly deliver: LeaseEvent | undefined
  /** A response to cancel on the server: it started for an asker that no longer wants it. */
  readonly cancel: string | undefined
  /** The server is done with every response asked for: those waiting to settle may go on. */
  readonly idle: boolean
}

/** Whether the server is generating a response or has one asked for and not started. */
export const busy = (ledger: Ledger): boolean => ledger.active !== undefined || ledger.requests.length > 0

const ended = (ledger: Ledger): boolean => {
  ledger.active = undefined
  return ledger.requests.length === 0
}

/**
 * Which lease `event` is for, `holder` being the lease that holds the connection now (or none).
 * A response asked for by a lease that was released since, or by an asker that gave it up, is
 * stale: none of its events reach anyone, and it is cancelled as it starts (rule 8).
 */
export const track = (ledger: Ledger, event: RealtimeEvent, holder: object | undefined): Verdict => {
  switch (event._tag) {
    case "ResponseStarted": {
      const request = ledger.requests.shift()
      const stale = request !== undefined && (request.abandoned || request.owner !== holder)
      ledger.active = { id: event.responseId, stale }
      return stale
        ? { deliver: undefined, cancel: event.responseId, idle: false }
        : { deliver: { ...event, ticket: request }, cancel: undefined, idle: false }
    }
    case "TextDelta":
    case "TranscriptDelta":
    case "AudioDelta":
    case "FunctionCall": {
      const stale = ledger.active?.id === event.responseId && ledger.active.stale
      return { deliver: stale ? undefined : event, cancel: undefined, idle: false }
    }
    case "ResponseDone": {
      const current = ledger.active?.id === event.responseId
      const stale = current && ledger.active!.stale
      return { deliver: stale ? undefined : event, cancel: undefined, idle: current && ended(ledger) }
    }
    case "Interrupted":
      return { deliver: event, cancel: undefined, idle: ended(ledger) }
    default:
      return { deliver: event, cancel: undefined, idle: false }
  }
}

/** `ticket`'s request is going out: its response is the next one the server starts. */
export const asked = (ledger: Ledger, ticket: Ticket): void => {
  ledger.requests.push(ticket)
}

/** `ticket`'s request could not be sent: no response will come for it. */
export const withdrawn = (ledger: Ledger, ticket: Ticket): void => {
  const index = ledger.requests.indexOf(ticket)
  if (index >= 0) ledger.requests.splice(index, 1)
}

/**
 * Its asker cuts a response: what is left of it reaches no one. With an id, only that response,
 * and only while the server still generates it (a late cancel must not cut the next answer).
 * Returns whether a cancel should go to the server, and for which response (undefined: the one
 * the server starts next).
 */
export const cut = (ledger: Ledger, responseId?: string): { readonly send: boolean; readonly id: string | undefined } => {
  if (responseId !== undefined && ledger.active?.id !== responseId) return { send: false, id: undefined }
  if (ledger.active) ledger.active.stale = true
  return { send: true, id: ledger.active?.id }
}

/**
 * The holder let the connection go: whatever it asked for is no one's now. Returns the response
 * to cancel on the server, if one is running.
 */
export const abandonAll = (ledger: Ledger): string | undefined => {
  if (ledger.active) ledger.active.stale = true
  for (const request of ledger.requests) request.abandoned = true
  return ledger.active?.id
}
