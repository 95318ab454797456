/**
 * A Twilio Media Stream caller for the /twilio tests: Twilio's first two messages on a stream
 * (`connected`, then `start` with the TwiML's `<Parameter>`s) and keypad presses, for one call.
 */
import type { Client } from "./harness.ts"

export interface TwilioCall {
  readonly accountSid: string
  readonly callSid: string
}

/** `connected` and `start` for `streamSid` of `call`, carrying `customParameters`. */
export const startStream = (call: TwilioCall, caller: Client, streamSid: string, customParameters: Record<string, string> = {}) => {
  caller.sendJson({ event: "connected", protocol: "Call", version: "1.0.0" })
  caller.sendJson({
    event: "start",
    sequenceNumber: "1",
    streamSid,
    start: {
      accountSid: call.accountSid,
      streamSid,
      callSid: call.callSid,
      tracks: ["inbound"],
      mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 },
      customParameters
    }
  })
}

/** The caller pressing `digits` on the keypad, one `dtmf` message each. */
export const press = (caller: Client, streamSid: string, digits: string) => {
  for (const [i, digit] of [...digits].entries()) {
    caller.sendJson({ event: "dtmf", streamSid, sequenceNumber: String(i + 2), dtmf: { track: "inbound_track", digit } })
  }
}
