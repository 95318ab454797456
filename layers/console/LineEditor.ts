/**
 * Line editing for a console on a terminal, on `node:readline`: arrow keys, history (up/down),
 * Ctrl-A/E/U/W, and typing ahead while an agent speaks without tearing its sentence.
 *
 * The editor's echo is muted except while the prompt is shown: what a person types while an
 * agent streams its reply is kept in the editor's line (not written into the reply) and appears
 * after the prompt when it comes back; a line finished with Enter meanwhile is queued as the next
 * input. Ctrl-C is passed on to the process as SIGINT (the runtime closes the session); Ctrl-D on
 * an empty line ends the input.
 */
import { type Cause, Effect, Queue, type Scope, Stream } from "effect"
import * as Readline from "node:readline"
import { Writable } from "node:stream"
import type { RawLine } from "./Input.ts"
import { MAX_READ_CHARS } from "./Input.ts"

export interface LineEditor {
  /** The lines entered, in order; ends with Ctrl-D or when the input closes. */
  readonly lines: Stream.Stream<RawLine>
  /** Shows `prompt` followed by whatever was typed ahead, and echoes typing again. */
  readonly prompt: (prompt: string) => Effect.Effect<void>
  /** Erases the prompt line and mutes the echo, before other output takes the screen. */
  readonly hide: Effect.Effect<void>
}

/**
 * The terminal the console edits lines on: its input and output streams, and what Ctrl-C does.
 *
 * @since 0.1.0
 * @category models
 */
export interface Terminal {
  readonly input: NodeJS.ReadableStream
  readonly output: NodeJS.WritableStream
  /** Called on Ctrl-C (default: SIGINT to this process). */
  readonly onInterrupt?: () => void
}

const HISTORY = 200

export const make = (terminal: Terminal): Effect.Effect<LineEditor, never, Scope.Scope> =>
  Effect.gen(function*() {
    let muted = true
    // readline echoes through this; it reaches the terminal only while the prompt is shown
    const echo = new Writable({
      write(chunk, _encoding, done) {
        if (!muted) terminal.output.write(chunk)
        done()
      }
    })
    Object.assign(echo, { isTTY: true, columns: (terminal.output as { columns?: number }).columns ?? 80 })
    const queue = yield* Queue.unbounded<RawLine, Cause.Done>()
    const rl = yield* Effect.acquireRelease(
      Effect.sync(() =>
        Readline.createInterface({ input: terminal.input, output: echo, terminal: true, historySize: HISTORY, prompt: "" })
      ),
      (rl) => Effect.sync(() => rl.close())
    )
    rl.on("line", (line: string) => {
      muted = true
      const overflow = line.length > MAX_READ_CHARS
      Queue.offerUnsafe(queue, { text: overflow ? line.slice(0, MAX_READ_CHARS) : line, overflow })
    })
    let closed = false
    rl.on("close", () => {
      closed = true
      Queue.endUnsafe(queue)
    })
    rl.on("SIGINT", () => (terminal.onInterrupt ?? (() => process.kill(process.pid, "SIGINT")))())

    return {
      lines: Stream.fromQueue(queue),
      prompt: (prompt) =>
        Effect.sync(() => {
          // after Ctrl-D the console may still print its last lines; there is no prompt to show
          if (closed) return
          muted = false
          rl.setPrompt(prompt)
          rl.prompt(true)
        }),
      hide: Effect.sync(() => {
        if (muted) return
        muted = true
        terminal.output.write("\r\u001b[K")
      })
    }
  })
