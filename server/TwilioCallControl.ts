/**
 * Hanging up and pressing keys on a Twilio call from the bridge. A Media Stream cannot carry
 * either (its messages are `media`, `mark` and `clear`), so both go through Twilio's REST API,
 * updating the live call (`POST /2010-04-01/Accounts/{AccountSid}/Calls/{CallSid}.json`, form
 * encoded, HTTP Basic with the account's SID and auth token):
 *
 * - hang up: `Status=completed`. Without API credentials the bridge closes the stream instead,
 *   which ends the call when the app's TwiML has nothing after its `<Connect>`.
 * - DTMF: new TwiML for the call, `<Play digits="...">` and then the same `<Connect><Stream>` with
 *   the call's resume token as a `<Parameter>`. Twilio stops this stream (`stop`), plays the tones
 *   and opens a new stream that resumes the same session (Twilio.ts), so the conversation goes on.
 *
 * The auth token is `Redacted` and never in a message.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Option, Redacted } from "effect"
import { CallControlError } from "../services/CallControl.ts"

/**
 * What the bridge needs to update calls: the account, its auth token, the API's base URL (a mock's
 * in tests) and the `wss://` URL of this service's `/twilio`, for the TwiML that reconnects the
 * stream after the tones.
 *
 * @since 0.1.0
 * @category models
 */
export interface TwilioApi {
  readonly accountSid: string
  readonly authToken: Redacted.Redacted<string>
  /** default https://api.twilio.com */
  readonly baseUrl: string
  /** The public `wss://.../twilio` URL (`BATON_TWILIO_STREAM_URL`); without it, no DTMF. */
  readonly streamUrl: Option.Option<string>
}

const escapeXml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/**
 * The TwiML that presses `digits` and then reconnects the call's stream with its resume token.
 *
 * @since 0.1.0
 * @category utils
 */
export const dtmfTwiml = (digits: string, streamUrl: string, resumeToken: string): string =>
  `<Response><Play digits="${escapeXml(digits)}"/><Connect><Stream url="${escapeXml(streamUrl)}">` +
  `<Parameter name="resumeToken" value="${escapeXml(resumeToken)}"/></Stream></Connect></Response>`

/**
 * Updates a live call with form parameters (`Status`, `Twiml`); a refusal is a `failed` error with
 * Twilio's code and message.
 *
 * @since 0.1.0
 * @category requests
 */
export const updateCall = (api: TwilioApi, callSid: string, params: Record<string, string>): Effect.Effect<void, CallControlError> =>
  Effect.tryPromise({
    try: async () => {
      const url = `${api.baseUrl.replace(/\/+$/, "")}/2010-04-01/Accounts/${encodeURIComponent(api.accountSid)}/Calls/${encodeURIComponent(callSid)}.json`
      const auth = Buffer.from(`${api.accountSid}:${Redacted.value(api.authToken)}`).toString("base64")
      const response = await fetch(url, {
        method: "POST",
        headers: { authorization: `Basic ${auth}`, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(params).toString(),
        signal: AbortSignal.timeout(10_000)
      })
      if (response.ok) return
      const body = (await response.json().catch(() => ({}))) as { code?: number; message?: string }
      throw new Error(`Twilio answered ${response.status}${body.code !== undefined ? ` (error ${body.code})` : ""}: ${body.message ?? response.statusText}`)
    },
    catch: (e) => new CallControlError({ reason: "failed", message: `updating call ${callSid}: ${e instanceof Error ? e.message : String(e)}` })
  })
