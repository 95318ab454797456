/**
 * A whole console program for one entry agent: a header, one session, the console attached to
 * it, and (optionally) the session's handoff timeline written when it ends. `baton console` and
 * the front-desk example are both this with different agents and headers.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect } from "effect"
import { writeFile } from "node:fs/promises"
import { type Agent, AgentSession, Timeline } from "../../src/index.ts"
import { ConsoleTransport } from "./ConsoleTransport.ts"
import type { Style } from "./Style.ts"

/**
 * Options of the console app: the entry agent, userdata, the header's title and model line, and
 * where to write the timeline at the end.
 *
 * @since 0.1.0
 * @category models
 */
export interface AppOptions<R> {
  readonly agent: Agent.Agent
  /** A fresh userdata value for the session (default: none). */
  readonly userdata?: () => unknown
  /** The first line of the header. */
  readonly title: string
  /** Lines under the title saying which model answers and how to change it. */
  readonly describeModel: (style: Style) => Effect.Effect<string, never, R>
  /** Where to write the session's handoff timeline (SVG) when it ends. */
  readonly timeline?: string | undefined
}

/**
 * The lines the console opens with: the title, the model line and how to use it.
 *
 * @since 0.1.0
 * @category utils
 */
export const header = (style: Style, title: string, model: string): ReadonlyArray<string> => [
  style.bold(title),
  model,
  style.dim("Type a line and press Enter. Ctrl-D or Ctrl-C to leave."),
  ""
]

/**
 * Runs the console app: prints the header, starts a session with `options.agent`, attaches the
 * console to it and, when it ends, writes the session's timeline if asked. Needs
 * `ConsoleTransport` and what the agent needs.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = <R>(options: AppOptions<R>) =>
  Effect.gen(function*() {
    const console = yield* ConsoleTransport
    yield* console.print(...header(console.style, options.title, yield* options.describeModel(console.style)))
    const session = yield* AgentSession.start({ agent: options.agent, userdata: options.userdata?.() })
    yield* console.attach(session).pipe(Effect.ensuring(writeTimeline(session, options)))
  }).pipe(Effect.scoped)

const writeTimeline = <R>(session: AgentSession.AgentSession, options: AppOptions<R>) =>
  Effect.gen(function*() {
    const path = options.timeline
    if (path === undefined) return
    const svg = Timeline.fromEvents(yield* session.eventLog, { title: options.title })
    yield* Effect.tryPromise(() => writeFile(path, svg)).pipe(
      Effect.matchEffect({
        onFailure: (e) => Effect.sync(() => process.stderr.write(`could not write the timeline to ${path}: ${String(e.cause)}\n`)),
        onSuccess: () => Effect.sync(() => process.stderr.write(`timeline written to ${path}\n`))
      })
    )
  })
