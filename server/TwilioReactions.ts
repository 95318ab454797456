/**
 * What each Twilio transfer callback does (issue 35): the outcome it settles, the TwiML that
 * answers it and the REST calls after it, as a pure function of how the transfer stands, so the
 * same callback gets the same answer on whichever node Twilio posts it to (TwilioTransfer.ts).
 */
import * as Transfer from "../src/Transfer.ts"

export const escapeXml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/** How a transfer stands: settled once a callback gave its outcome (later ones change nothing),
 * accepted once a warm transfer's person pressed 1. */
export interface Standing {
  readonly settled: boolean
  readonly accepted: boolean
}

/** What one callback does: the outcome it settles, the TwiML to answer, and the REST calls after it. */
export interface Reaction {
  readonly outcome?: Transfer.TransferOutcome
  readonly accepted?: boolean
  readonly twiml: string
  /** The caller's TwiML is replaced by the way back to the agent before the outcome is given. */
  readonly returnCaller?: boolean
  /** A leg to hang up (a warm transfer's answering machine). */
  readonly hangUp?: string
}

export const HANGUP = "<Response><Hangup/></Response>"
export const EMPTY = "<Response/>"

export const dialStatus = (status: string | undefined): Transfer.TransferOutcome => {
  switch (status) {
    case "completed":
    case "answered":
      return Transfer.outcome("Answered", `DialCallStatus=${status}`)
    case "busy":
      return Transfer.outcome("Busy", "DialCallStatus=busy")
    case "no-answer":
      return Transfer.outcome("NoAnswer", "DialCallStatus=no-answer")
    default:
      return Transfer.outcome("Failed", `DialCallStatus=${status ?? "missing"}`)
  }
}

/** A warm transfer's conference: the caller waits in it (`start` false, hearing `holdAudio`) until the person joins it. */
export const conference = (id: string, start: boolean, holdAudio?: string | undefined) =>
  `<Dial><Conference startConferenceOnEnter="${start}" endConferenceOnExit="true" beep="false"${
    !start && holdAudio !== undefined ? ` waitUrl="${escapeXml(holdAudio)}"` : ""
  }>baton-transfer-${id}</Conference></Dial>`

/**
 * What a callback does to transfer `id`, from how it stands: the same answer on whichever node it
 * lands. `back` is the caller's TwiML back to the agent.
 *
 * - Cold: the person's leg `in-progress` (its `answered` status callback) is Answered; the dial's
 *   action (when the bridged call ends, or it was not answered) settles by `DialCallStatus`, and
 *   is answered with a hang-up after an answered transfer, else the stream back to the agent.
 * - Warm: the person pressing 1 after the briefing joins the conference (Answered); another key,
 *   hanging up, the status callback's `busy`/`no-answer`/`failed`, or an answering machine give
 *   the caller back to the agent (only the first callback that settles acts).
 */
export const react = (id: string, kind: "Cold" | "Warm", standing: Standing, back: string, callback: string, params: Record<string, string>): Reaction => {
  if (kind === "Cold") {
    if (callback === "status" && params["CallStatus"] === "in-progress" && !standing.settled) {
      return { outcome: Transfer.outcome("Answered", "CallStatus=in-progress"), twiml: EMPTY }
    }
    if (callback !== "dial") return { twiml: EMPTY }
    if (standing.settled) return { twiml: HANGUP }
    const outcome = dialStatus(params["DialCallStatus"])
    return { outcome, twiml: outcome._tag === "Answered" ? HANGUP : back }
  }
  if (callback === "gather" && params["Digits"] === "1" && !standing.settled) {
    return { outcome: Transfer.outcome("Answered", "the person pressed 1 after the briefing"), accepted: true, twiml: `<Response>${conference(id, true)}</Response>` }
  }
  const giveBack = (outcome: Transfer.TransferOutcome, twiml: string, extra: Partial<Reaction> = {}): Reaction =>
    standing.settled ? { twiml, ...extra } : { outcome, twiml, returnCaller: true, ...extra }
  if (callback === "gather") {
    return giveBack(Transfer.outcome("Declined", `the person pressed ${params["Digits"] || "nothing"} after the briefing`), HANGUP)
  }
  if (callback === "amd" && (params["AnsweredBy"] ?? "").startsWith("machine_")) {
    return giveBack(Transfer.outcome("Voicemail", `AnsweredBy=${params["AnsweredBy"]}`), EMPTY, params["CallSid"] ? { hangUp: params["CallSid"] } : {})
  }
  if (callback === "status" && !standing.accepted) {
    const status = params["CallStatus"]
    return giveBack(status === "completed" ? Transfer.outcome("Declined", "the person hung up before accepting") : dialStatus(status), EMPTY)
  }
  return { twiml: EMPTY }
}
