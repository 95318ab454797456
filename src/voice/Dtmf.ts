/**
 * Keypad presses on a phone line (DTMF), gathered into one user turn: "press 1 for billing",
 * "enter your account number, then the pound key". Digits are kept until the finish digit (`#`,
 * not part of the turn unless pressed alone), a pause of `interDigitTimeout`, or `maxDigits`;
 * then the turn goes to whoever holds the floor as `"DTMF: 1234"` (the `prefix` tells the model
 * how the words came), like a typed turn: it cuts what the agent was saying.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Duration, Effect, Fiber, Scope } from "effect"

/**
 * How keypad presses become a turn: the digit that ends it, the pause that ends it, the most
 * digits, and the text it starts with.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Ends the turn at once (default `#`). */
  readonly finishDigit?: string | undefined
  /** A pause this long after a digit ends the turn (default 2 s). */
  readonly interDigitTimeout?: Duration.Input | undefined
  /** The turn ends once it has this many digits (default 32). */
  readonly maxDigits?: number | undefined
  /** What the turn's text starts with (default `"DTMF: "`). */
  readonly prefix?: string | undefined
}

/**
 * Gathers keypad presses into turns: `press` a key, `flush` what is pressed when the call ends.
 *
 * @since 0.1.0
 * @category models
 */
export interface Collector {
  /** One key: 0-9, `*`, `#` or A-D; anything else is ignored with a warning. */
  readonly press: (digit: string) => Effect.Effect<void>
  /** Ends the turn now with the digits pressed so far, if any (the call is ending). */
  readonly flush: Effect.Effect<void>
}

const KEY = /^[0-9*#A-D]$/

/**
 * Gathers presses into turns for `deliver`; its pause timer lives in the current Scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const collector = (deliver: (text: string) => Effect.Effect<void>, options: Options = {}): Effect.Effect<Collector, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const finish = options.finishDigit ?? "#"
    const pause = Duration.fromInputUnsafe(options.interDigitTimeout ?? "2 seconds")
    const maxDigits = options.maxDigits ?? 32
    const prefix = options.prefix ?? "DTMF: "
    let digits = ""
    let timer: Fiber.Fiber<void> | undefined
    const stopTimer = Effect.suspend(() => {
      const running = timer
      timer = undefined
      return running ? Fiber.interrupt(running) : Effect.void
    })
    const end = (text: string) => (text === "" ? Effect.void : deliver(prefix + text))
    const flush: Effect.Effect<void> = Effect.suspend(() => {
      const text = digits
      digits = ""
      return Effect.andThen(stopTimer, end(text))
    })
    const press = (digit: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (!KEY.test(digit)) return Effect.logWarning(`DTMF: ignored a key that is not one (${JSON.stringify(digit).slice(0, 20)})`)
        if (digit === finish) {
          // Pressed alone, the finish digit is the turn ("press pound to repeat").
          if (digits === "") digits = digit
          return flush
        }
        digits += digit
        if (digits.length >= maxDigits) return flush
        return Effect.andThen(stopTimer, Effect.sleep(pause).pipe(
          Effect.andThen(Effect.suspend(() => {
            // This timer's own end: it is not interrupted by the flush it runs.
            timer = undefined
            return flush
          })),
          Effect.forkIn(scope),
          Effect.map((fiber) => {
            timer = fiber
          })
        ))
      })
    return { press, flush }
  })
