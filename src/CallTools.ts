/**
 * Tools that act on the call itself, through the `CallControl` service of the transport the
 * session is on: `endCall` (the agent says its goodbye, the words play out, then the transport
 * hangs up) and `sendDtmf` (keypad tones to the other end, to find a way through an IVR's menu).
 * An agent with them needs `CallControl`: `/ws`, `/twilio` and LiveKit rooms provide it.
 *
 * ```ts
 * const desk = Agent.make({
 *   name: "desk",
 *   instructions: "Help; when the caller is done, end the call.",
 *   tools: [CallTools.endCall({ goodbye: "Thanks for calling, goodbye!" })]
 * })
 * ```
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Schema } from "effect"
import { CallControl, CallControlError, validDigits } from "../services/CallControl.ts"
import * as Agent from "./Agent.ts"
import * as Tool from "./Tool.ts"

/**
 * The options of `endCall`: its name and description for the model, the goodbye it says, and the
 * reason the transport is given.
 *
 * @since 0.1.0
 * @category models
 */
export interface EndCallOptions {
  /** default "end_call" */
  readonly name?: string
  readonly description?: string
  /** Said before hanging up (default "Goodbye!"); `""` says nothing. */
  readonly goodbye?: string
  /** Given to the transport (the `/ws` close reason; default "the agent ended the call"). */
  readonly reason?: string
}

/**
 * A tool that ends the call: the goodbye is said and heard to its end (a barge-in cuts it short,
 * and the call still ends), then `CallControl.hangUp`. The model gets no turn after it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const endCall = (options: EndCallOptions = {}): Tool.Tool<{}, CallControl, Tool.NoReply> =>
  Tool.make(options.name ?? "end_call", {
    description: options.description ??
      "End the call. Use it when the caller says goodbye or the conversation is over; the goodbye is said for you.",
    handler: () =>
      Effect.gen(function*() {
        const goodbye = options.goodbye ?? "Goodbye!"
        if (goodbye !== "") {
          const spoken = yield* Agent.say(goodbye)
          yield* spoken.wait
        }
        const control = yield* CallControl
        yield* control.hangUp(options.reason ?? "the agent ended the call")
        return Tool.noReply("The call has ended.")
      })
  })

const DtmfParameters = Schema.Struct({
  digits: Schema.String.annotate({ description: "The keys to press: 0-9, * and #; w waits half a second" })
})

/**
 * A tool that presses keys on the call (DTMF): for an IVR's menu ("press 1 for sales"). Bad
 * digits, or a transport without a keypad (`/ws`), give the model an error output saying why.
 *
 * @since 0.1.0
 * @category constructors
 */
export const sendDtmf = (options: { readonly name?: string; readonly description?: string } = {}) =>
  Tool.make(options.name ?? "send_dtmf", {
    description: options.description ?? "Press keys on the phone's keypad (DTMF), e.g. to choose an option of an automated menu.",
    parameters: DtmfParameters,
    handler: ({ digits }) =>
      Effect.gen(function*() {
        const valid = yield* validDigits(digits)
        const control = yield* CallControl
        yield* control.sendDtmf(valid)
        return `Pressed ${valid}.`
      })
  })

export { CallControl, CallControlError }
