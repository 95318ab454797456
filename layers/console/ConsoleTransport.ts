/**
 * A terminal console for one session: text in, text out.
 *
 * ```ts
 * const main = Effect.gen(function*() {
 *   const console = yield* ConsoleTransport
 *   const session = yield* AgentSession.start({ agent: greeter })
 *   yield* console.attach(session)      // returns when input ends; the session is then closed
 * }).pipe(Effect.scoped, Effect.provide([ConsoleTransport.layerNode(), modelLayer]))
 * NodeRuntime.runMain(main)
 * ```
 *
 * **I/O.** It reads and writes through Effect's `Stdio` service (`stdin` bytes, an `stdout`
 * sink), not Node's `readline`: `ConsoleTransport.layerNode` uses the process's stdio
 * (`NodeStdio.layer`), and tests provide a fake `Stdio` (`Stdio.make`) to drive it in-process.
 * Its layer also provides the `TextOutput` the session writes agent text to, so provide it
 * before the session starts.
 *
 * **Turns.** Lines are read one at a time: a line is cleaned (`Input.ts`: control characters
 * removed, cut at `MAX_LINE_CHARS` with a notice, empty lines ignored), sent with
 * `session.send`, and the next line is read only once the session is idle again, when the
 * prompt (`you> `) is shown. Each line read gets exactly one new prompt, so a program driving
 * the console can wait for it. Lines typed (or piped) ahead are buffered, not lost. When stdin
 * is not a terminal, the line is echoed after the prompt so a transcript reads like a dialogue.
 *
 * **What is shown** (see `Render.ts`): agent text as it streams, prefixed `[agent]`; floor
 * changes; every tool call with its arguments and its output; handoffs not applied; errors;
 * the end of the session. Events are rendered in session order: they are taken from the
 * session's event stream as they happen, and before an agent starts speaking (and before each
 * prompt) everything already in the session's event log is rendered first, so a reply never
 * appears above the handoff that led to it.
 *
 * **The end.** When stdin ends (Ctrl-D, or the pipe closes), when the session closes itself,
 * or when the fiber is interrupted (`NodeRuntime.runMain` does that on Ctrl-C), `attach`
 * closes the session, renders its last events (`── session closed`) and writes nothing more.
 *
 * Colours (ANSI) are used only when stdout is a terminal and `NO_COLOR` is unset or empty.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import * as NodeStdio from "@effect/platform-node/NodeStdio"
import { Config, Context, Data, Deferred, Effect, Exit, Fiber, Layer, Option, Semaphore, Stdio, Stream } from "effect"
import type { AgentSession } from "../../src/AgentSession.ts"
import type { SessionEvent } from "../../src/index.ts"
import { type SpeechInfo, TextOutput, type TextOutputService } from "../../services/TextOutput.ts"
import * as Input from "./Input.ts"
import * as LineEditor from "./LineEditor.ts"
import { agentLabel, renderEvent } from "./Render.ts"
import * as Style from "./Style.ts"

/**
 * Options of the console: colours, echo, the prompt and the terminal to edit lines on.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Use ANSI colours (default: stdout is a terminal and `NO_COLOR` is unset or empty). */
  readonly color?: boolean
  /** Echo each line after the prompt (default: when stdin is not a terminal). */
  readonly echoInput?: boolean
  /** The prompt shown when the session is idle (default `"you> "`). */
  readonly prompt?: string
  /**
   * Edit lines on this terminal (history, arrow keys, typing ahead while an agent speaks) instead
   * of reading `Stdio`'s stdin. `layerNode` uses the process's when stdin and stdout are terminals.
   */
  readonly terminal?: LineEditor.Terminal
  /** Show "… thinking" while a turn waits for its first words (default: stdout is a terminal). */
  readonly thinking?: boolean
}

/**
 * The prompt shown when the session is idle.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_PROMPT = "you> "

/**
 * What the console offers: its style, printing whole lines, and `attach`, which runs it for a
 * session.
 *
 * @since 0.1.0
 * @category models
 */
export interface ConsoleTransportService {
  readonly style: Style.Style
  /** Writes whole lines, after closing any line left open (a prompt, a reply being streamed). */
  readonly print: (...lines: ReadonlyArray<string>) => Effect.Effect<void>
  /**
   * Runs the console for `session`: shows its events and replies, sends it the lines read from
   * stdin, and when input ends (or the session closes, or this is interrupted) closes the
   * session and renders its last events. Fails with `FatalModelError` when the model refuses the
   * configuration itself (an invalid key, a refused request): no turn could succeed after it.
   */
  readonly attach: (session: AgentSession<any>) => Effect.Effect<void, FatalModelError>
}

/**
 * The model refused the configuration (key, URL, request shape): the console cannot go on.
 *
 * @since 0.1.0
 * @category errors
 */
export class FatalModelError extends Data.TaggedError("FatalModelError")<{ readonly message: string }> {}

/** Reasons no later turn can fix, with what the user should do. */
const fatal: Partial<Record<string, string>> = {
  InvalidKey: "set OPENAI_API_KEY to a valid key (or unset it and OPENAI_BASE_URL for the demo model)",
  QuotaExhausted: "the account behind OPENAI_API_KEY has no quota left",
  InvalidRequest: "the server refused the request: check OPENAI_MODEL, and that OPENAI_BASE_URL ends in /v1"
}

/**
 * The one line to leave with when `event` is a failure no later turn can fix.
 *
 * @since 0.1.0
 * @category utils
 */
export const fatalLine = (event: SessionEvent): string | undefined => {
  if (event.type !== "error" || event.source !== "model" || event.retryable || event.reason === undefined) return undefined
  const todo = fatal[event.reason]
  return todo === undefined ? undefined : `baton: the model failed (${event.message}); ${todo}`
}

type Open = "none" | "prompt" | "speech" | "thinking"

const THINKING = "… thinking"

/**
 * `editor`: a terminal's line editor (history, arrow keys, typing ahead while an agent speaks);
 * without one, lines are read from `stdio.stdin` as they come. `thinking`: show "… thinking"
 * while a turn waits for its first words (a terminal only).
 */
const make = (
  stdio: Stdio.Stdio,
  style: Style.Style,
  echoInput: boolean,
  prompt: string,
  editor: LineEditor.LineEditor | undefined,
  thinking: boolean
) =>
  Effect.gen(function*() {
    const lock = yield* Semaphore.make(1)
    const locked = <A>(effect: Effect.Effect<A>) => lock.withPermit(effect)
    const write = (text: string): Effect.Effect<void> =>
      text === "" ? Effect.void : Stream.run(Stream.make(text), stdio.stdout()).pipe(Effect.ignore)

    // Screen state, only touched with the lock held.
    let open: Open = "none"
    let speech: SpeechInfo | undefined
    let session: AgentSession<any> | undefined
    let lastSeq = -1
    let sessionClosed = false
    let onClose = () => {}
    // A prompt is due (shown, or hidden by output that came meanwhile) / a turn awaits its first words.
    let atPrompt = false
    let waiting = false

    const breakLine = Effect.suspend(() => {
      const was = open
      open = "none"
      if (was === "prompt" && editor) return editor.hide
      if (was === "thinking") return write("\r\u001b[K")
      return was === "none" ? Effect.void : write("\n")
    })
    /** After other output: the editor's prompt comes back, or "thinking" while a turn still waits. */
    const restore = Effect.suspend(() => {
      if (open !== "none" || sessionClosed) return Effect.void
      if (atPrompt && editor) return showPromptNow
      if (waiting && thinking) return showThinking
      return Effect.void
    })
    const showThinking = write(style.dim(THINKING)).pipe(Effect.andThen(Effect.sync(() => {
      open = "thinking"
    })))
    const writeLines = (lines: ReadonlyArray<string>) =>
      lines.length === 0
        ? Effect.void
        : breakLine.pipe(Effect.andThen(write(lines.join("\n") + "\n")), Effect.andThen(restore))

    /** Renders the events not rendered yet; they count as rendered once written. */
    const render = (events: ReadonlyArray<SessionEvent>) =>
      Effect.suspend(() => {
        const fresh = events.filter((event) => event.seq > lastSeq)
        if (fresh.length === 0) return Effect.void
        return writeLines(fresh.flatMap((event) => renderEvent(event, style))).pipe(
          Effect.andThen(Effect.sync(() => {
            lastSeq = Math.max(lastSeq, fresh[fresh.length - 1]!.seq)
            if (fresh.some((event) => event.type === "close")) {
              sessionClosed = true
              onClose()
            }
          }))
        )
      })

    /** Renders every logged event not rendered yet. */
    const catchUp = Effect.suspend(() =>
      session === undefined ? Effect.void : session.eventLog.pipe(Effect.flatMap(render))
    )

    /** Events from the stream: rendered directly when nothing is missing, else from the log. */
    let onFatal: ((line: string) => void) | undefined
    const onEvents = (events: ReadonlyArray<SessionEvent>) =>
      Effect.suspend(() => {
        for (const event of events) {
          const line = fatalLine(event)
          if (line !== undefined) onFatal?.(line)
        }
        const fresh = events.filter((event) => event.seq > lastSeq)
        const contiguous = fresh.every((event, i) => event.seq === (i === 0 ? lastSeq : fresh[i - 1]!.seq) + 1)
        return contiguous ? render(fresh) : catchUp
      })

    const labelOf = (agent: string) => `${agentLabel(style, agent)} `
    const indentOf = (agent: string) => " ".repeat(Array.from(agentLabel(Style.plain, agent)).length + 1)

    const openSpeech = (info: SpeechInfo) =>
      breakLine.pipe(
        Effect.andThen(write(labelOf(info.agent))),
        Effect.andThen(Effect.sync(() => {
          open = "speech"
          speech = info
          waiting = false
        }))
      )

    const textOutput: TextOutputService = {
      start: (info) => locked(catchUp.pipe(Effect.andThen(openSpeech(info)))),
      write: (text, info) =>
        locked(Effect.suspend(() => {
          const shown = Input.forDisplay(text)
          if (shown === "") return Effect.void
          const reopen = open !== "speech" || speech?.speechId !== info.speechId ? openSpeech(info) : Effect.void
          return reopen.pipe(Effect.andThen(write(shown.replace(/\n/g, `\n${indentOf(info.agent)}`))))
        })),
      end: (info, interrupted) =>
        locked(Effect.suspend(() => {
          if (open !== "speech" || speech?.speechId !== info.speechId) return Effect.void
          open = "none"
          speech = undefined
          return write(`${interrupted ? style.dim(" …[interrupted]") : ""}\n`).pipe(Effect.andThen(restore))
        }))
    }

    const showPromptNow = breakLine.pipe(
      Effect.andThen(editor ? editor.prompt(style.bold(prompt)) : write(style.bold(prompt))),
      Effect.andThen(Effect.sync(() => {
        open = "prompt"
      }))
    )
    const showPrompt = locked(catchUp.pipe(
      Effect.andThen(Effect.suspend(() => {
        waiting = false
        if (sessionClosed) return Effect.void
        atPrompt = true
        return showPromptNow
      }))
    ))

    /** A line was sent: "… thinking" until the first words (or the next prompt). */
    const sent = locked(Effect.suspend(() => {
      waiting = true
      return restore
    }))

    /** After a line was read: echo it (or note that the terminal did) and say what was changed. */
    const acknowledge = (line: Input.InputLine) =>
      locked(Effect.gen(function*() {
        atPrompt = false
        if (echoInput && open === "prompt") yield* write(line._tag === "Text" ? line.text : "")
        if (open === "prompt") {
          if (echoInput) yield* write("\n")
          open = "none"
        }
        if (line._tag === "Empty") return
        const notices: Array<string> = []
        if (line.cut) notices.push(`(input cut to ${Input.MAX_LINE_CHARS} characters)`)
        if (line.removed > 0) notices.push(`(removed ${line.removed} control character${line.removed === 1 ? "" : "s"})`)
        yield* writeLines(notices.map((notice) => style.dim(`  ${notice}`)))
      }))

    const attach = (target: AgentSession<any>): Effect.Effect<void, FatalModelError> =>
      Effect.gen(function*() {
        const closed = yield* Deferred.make<void>()
        const failedFatally = yield* Deferred.make<never, FatalModelError>()
        yield* locked(Effect.sync(() => {
          session = target
          onClose = () => Deferred.doneUnsafe(closed, Exit.void)
          onFatal = (message) => Deferred.doneUnsafe(failedFatally, Effect.fail(new FatalModelError({ message })))
        }))
        yield* locked(catchUp)
        const renderer = yield* target.events.pipe(
          Stream.runForEachArray((events) => locked(onEvents(events))),
          Effect.andThen(locked(catchUp)),
          Effect.forkChild({ startImmediately: true })
        )
        const turn = (raw: Input.RawLine) =>
          Effect.gen(function*() {
            const line = Input.clean(raw)
            yield* acknowledge(line)
            if (line._tag === "Text") {
              yield* target.send(line.text)
              yield* sent
              yield* target.idle
            }
            yield* showPrompt
          })
        const input = (editor ? editor.lines : Input.lines(stdio.stdin)).pipe(
          Stream.runForEach(turn),
          Effect.catch((error) => locked(writeLines([style.red(`! error (input): ${error.message}`)])))
        )
        yield* Effect.raceFirst(target.idle.pipe(Effect.andThen(showPrompt)), Deferred.await(failedFatally))
        yield* Effect.raceFirst(Effect.raceFirst(input, Deferred.await(closed)), Deferred.await(failedFatally))
        yield* Fiber.interrupt(renderer)
      }).pipe(Effect.ensuring(finish(target)))

    /** Closes the session and renders what is left; nothing is written after this. */
    const finish = (target: AgentSession<any>) =>
      target.close.pipe(
        Effect.andThen(locked(Effect.suspend(() => {
          session = target
          return catchUp.pipe(Effect.andThen(breakLine))
        })))
      )

    const service: ConsoleTransportService = {
      style,
      print: (...lines) => locked(writeLines(lines)),
      attach
    }
    return { service, textOutput }
  })

const build = (options: Options, terminal: LineEditor.Terminal | undefined) =>
  Layer.effectContext(
    Effect.gen(function*() {
      const stdio = yield* Stdio.Stdio
      const noColor = yield* Config.option(Config.String("NO_COLOR")).pipe(
        Effect.orElseSucceed(() => Option.none<string>())
      )
      const color = options.color ?? Style.shouldColor(yield* stdio.stdoutIsTerminal, Option.getOrUndefined(noColor))
      const echoInput = options.echoInput ?? !(yield* stdio.stdinIsTerminal)
      const editor = terminal ? yield* LineEditor.make(terminal) : undefined
      const thinking = options.thinking ?? (yield* stdio.stdoutIsTerminal)
      const { service, textOutput } = yield* make(stdio, Style.make(color), echoInput, options.prompt ?? DEFAULT_PROMPT, editor, thinking)
      return Context.make(ConsoleTransport, service).pipe(Context.add(TextOutput, textOutput))
    })
  ) as Layer.Layer<ConsoleTransport, never, Stdio.Stdio>

/**
 * The console over a `Stdio` service (tests provide a fake one), reading lines from its stdin, or
 * editing them on `options.terminal`.
 * Provides `ConsoleTransport` and the `TextOutput` that sessions started under it write to.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<ConsoleTransport, never, Stdio.Stdio> => build(options, options.terminal)

/**
 * The console over the process's stdin and stdout; on a terminal (both ends), with line editing
 * (`LineEditor.ts`) and the "thinking" indicator.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNode = (options: Options = {}): Layer.Layer<ConsoleTransport> =>
  build(
    options,
    options.terminal ?? (process.stdin.isTTY && process.stdout.isTTY ? { input: process.stdin, output: process.stdout } : undefined)
  ).pipe(Layer.provide(NodeStdio.layer))

/**
 * A terminal for one session: lines typed in go to the session, the agents' words, tool calls and
 * handoffs come out. Provide `layer` (over a `Stdio` service) or `layerNode` (the process's stdin
 * and stdout).
 *
 * @since 0.1.0
 * @category services
 */
export class ConsoleTransport extends Context.Service<ConsoleTransport, ConsoleTransportService>()(
  "baton/layers/console/ConsoleTransport"
) {
  /** The console over a `Stdio` service (tests provide a fake one); also provides `TextOutput`. */
  static readonly layer = layer
  /** The console over the process's stdin and stdout; also provides `TextOutput`. */
  static readonly layerNode = layerNode
}
