/**
 * The Node service: `Server.layer` / `run`, its options, the wire protocol and the phone bridge.
 *
 * @module @baton-voice/baton/node
 */
export * as Config from "./Config.ts"
export * as Server from "./Server.ts"
export { run, type SignalSource } from "./Run.ts"
export * as Token from "./Token.ts"
export * as OperatorTransfer from "./OperatorTransfer.ts"
export * as Twilio from "./Twilio.ts"
export * as TwilioTransfer from "./TwilioTransfer.ts"
export * as Wire from "./Wire.ts"
