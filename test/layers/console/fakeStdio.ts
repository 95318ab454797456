/**
 * A fake `Stdio` for driving the console in-process: stdin is a stream of byte chunks (which
 * may end, or not), stdout is collected as text.
 */
import { Effect, Layer, Sink, Stdio, Stream } from "effect"

export interface FakeStdioOptions {
  readonly stdinIsTerminal?: boolean
  readonly stdoutIsTerminal?: boolean
  /** Keep stdin open after the chunks (the default ends it, like Ctrl-D or a closed pipe). */
  readonly keepOpen?: boolean
  /** Also called with each piece of text written to stdout, in order. */
  readonly onWrite?: (text: string) => void
}

export interface FakeStdio {
  readonly layer: Layer.Layer<Stdio.Stdio>
  /** Everything written to stdout so far. */
  readonly output: () => string
}

const encoder = new TextEncoder()

export const make = (chunks: ReadonlyArray<string | Uint8Array>, options: FakeStdioOptions = {}): FakeStdio => {
  const written: Array<string> = []
  const decoder = new TextDecoder()
  const bytes = chunks.map((chunk) => (typeof chunk === "string" ? encoder.encode(chunk) : chunk))
  const stdin = options.keepOpen ? Stream.concat(Stream.fromIterable(bytes), Stream.never) : Stream.fromIterable(bytes)
  const stdio = Stdio.make({
    args: Effect.succeed([]),
    stdin,
    stdout: () =>
      Sink.forEach((chunk: string | Uint8Array) =>
        Effect.sync(() => {
          const text = typeof chunk === "string" ? chunk : decoder.decode(chunk)
          written.push(text)
          options.onWrite?.(text)
        })
      ),
    stderr: () => Sink.forEach(() => Effect.void),
    stdinIsTerminal: Effect.succeed(options.stdinIsTerminal ?? false),
    stdoutIsTerminal: Effect.succeed(options.stdoutIsTerminal ?? false)
  })
  return { layer: Layer.succeed(Stdio.Stdio, stdio), output: () => written.join("") }
}

/** Lines of input, each ended by a newline. */
export const lines = (...input: ReadonlyArray<string>): ReadonlyArray<string> => input.map((line) => `${line}\n`)
