/**
 * A `TextOutput` that records what each agent delivered, for tests.
 */
import { Context, Effect, Layer } from "effect"
import { TextOutput } from "../../services/TextOutput.ts"

export interface Delivery {
  readonly agent: string
  readonly speechId: string
  readonly text: string
}

export interface TextCaptureService {
  readonly writes: ReadonlyArray<Delivery>
  /** Everything `agent` delivered, joined. */
  readonly textOf: (agent: string) => string
}

export class TextCapture extends Context.Service<TextCapture, TextCaptureService>()("baton/testing/TextCapture") {}

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
