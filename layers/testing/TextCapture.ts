/**
 * A `TextOutput` that records what each agent delivered, for tests.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, Effect, Layer } from "effect"
import { TextOutput } from "../../services/TextOutput.ts"

/**
 * One piece of text an agent's speech delivered.
 *
 * @since 0.1.0
 * @category models
 */
export interface Delivery {
  readonly agent: string
  readonly speechId: string
  readonly text: string
}

/**
 * What the `TextCapture` service gives a test: every delivery, and the text of one agent.
 *
 * @since 0.1.0
 * @category models
 */
export interface TextCaptureService {
  readonly writes: ReadonlyArray<Delivery>
  /** Everything `agent` delivered, joined. */
  readonly textOf: (agent: string) => string
}

/**
 * Records what each agent said through `TextOutput`. Use it in tests to assert on the words
 * delivered (with interruptions, what was delivered before the cut).
 *
 * @since 0.1.0
 * @category services
 */
export class TextCapture extends Context.Service<TextCapture, TextCaptureService>()("baton/testing/TextCapture") {}

/**
 * Provides `TextCapture` and a `TextOutput` that records into it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<TextCapture> = Layer.effectContext(
  Effect.sync(() => {
    const writes: Array<Delivery> = []
    const capture: TextCaptureService = {
      writes,
      textOf: (agent) => writes.filter((w) => w.agent === agent).map((w) => w.text).join("")
    }
    return Context.make(TextCapture, capture).pipe(
      Context.add(TextOutput, {
        start: () => Effect.void,
        write: (text, info) => Effect.sync(() => void writes.push({ agent: info.agent, speechId: info.speechId, text })),
        end: () => Effect.void
      })
    )
  })
) as Layer.Layer<TextCapture>
