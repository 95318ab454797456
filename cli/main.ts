#!/usr/bin/env node
/**
 * `baton`: one command for every mode. `baton --help`, `baton <mode> --help`.
 *
 *   baton console [--agents ./my-agents.ts] [--timeline out.svg]   a session in the terminal
 *   baton serve   [--agents ./my-agents.ts] [--port N] [--host H]   the Node service
 *   baton worker  [--agents ./my-agents.ts] [--agent-name N]        a LiveKit agent worker
 *   baton timeline <events.jsonl> [out.svg]                          a recorded session as SVG
 *   baton sim     --agents ./agents.mjs [--seeds N] [--seed N]         the rules simulation on your agents
 *   baton sim     [--seeds N] [--seed N --log] ...                   the rules simulation (repository only)
 *
 * Every mode takes `--log-level` (or `BATON_LOG_LEVEL`; logs go to stderr, JSON when not a terminal). What stops a mode from running (a bad
 * agents module, no model, an unsafe host, an invalid key) ends it with one line on stderr and
 * exit code 1; Ctrl-C and SIGTERM end it cleanly with 0.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Cause, Effect, Exit, Runtime } from "effect"
import { Argument, Command, Flag, GlobalFlag } from "effect/cli"
import { importPeer } from "../layers/rtc/RtcNode.ts"
import { console as consoleMode } from "./Console.ts"
import * as Logging from "./Logging.ts"
import { serve } from "./Serve.ts"
import { sim } from "./Sim.ts"
import { timeline } from "./Timeline.ts"
import * as WorkerSettings from "./WorkerSettings.ts"

const VERSION = "0.1.0"

const agents = Flag.String("agents").pipe(
  Flag.withDescription("a module exporting the entry `agent` (and optionally `userdata` and `model`); default: the front desk demo"),
  Flag.optional
)

const voice = Flag.Literals("voice", ["auto", "local", "off"]).pipe(
  Flag.withDescription("voice by the offline pipeline (WebRTC VAD, pocketsphinx, flite): auto = when installed"),
  Flag.withDefault("auto" as const)
)

const baton = Command.make("baton").pipe(
  Command.withDescription("Voice AI agents that hand a conversation to one another without races.")
)

/** The exit code a mode asked for, kept until the runtime's teardown. */
let exitCode = 0

/** Failures a user can fix: one line on stderr, exit code 1. */
const oneLine = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.catch((error) =>
    Effect.sync(() => {
      process.stderr.write(`baton: ${messageOf(error)}\n`)
      exitCode = 1
    })
  ))

const messageOf = (error: unknown): string => {
  if (typeof error !== "object" || error === null) return String(error)
  const { _tag, message, cause } = error as { _tag?: string; message?: string; cause?: unknown }
  if (_tag === "ServeError") return `cannot listen: ${String((cause as Error)?.message ?? cause)} (is the port taken?)`
  return typeof message === "string" && message !== "" ? message : String(error)
}

/** Runs `effect` with this run's logging; a defect is logged by the same logger (one format per
 * run: the runtime's own report of it would be pretty among JSON lines) and exits 1. */
const withLogging = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    return yield* effect.pipe(
      Effect.catchDefect((defect) =>
        Effect.logError(defect).pipe(Effect.andThen(Effect.sync(() => {
          exitCode = 1
        })))
      ),
      Logging.provide(yield* GlobalFlag.LogLevel)
    )
  })

const consoleCommand = Command.make("console", {
  agents,
  timeline: Flag.String("timeline").pipe(Flag.withDescription("write the session's handoff timeline (SVG) here when it ends"), Flag.optional)
}, (flags) => oneLine(withLogging(consoleMode(flags)))).pipe(
  Command.withDescription("Talk to the agents in this terminal (the front desk demo on the demo model when there is no OPENAI_API_KEY).")
)

const serveCommand = Command.make("serve", {
  agents,
  port: Flag.Int("port").pipe(Flag.withDescription("the port (default: PORT, else 8080; 0 picks a free one)"), Flag.optional),
  host: Flag.String("host").pipe(Flag.withDescription("the interface (default: HOST, else 127.0.0.1; others need BATON_TOKEN)"), Flag.optional),
  voice
}, (flags) => oneLine(withLogging(serve(flags)))).pipe(
  Command.withDescription("Run the service: a web page, WebSocket sessions (/ws), the Twilio bridge (/twilio), /health and /metrics.")
)

const timelineCommand = Command.make("timeline", {
  input: Argument.String("events.jsonl").pipe(Argument.withDescription("a session's event log (JSON lines)")),
  output: Argument.String("out.svg").pipe(Argument.withDescription("where to write the picture (default: next to the input)"), Argument.optional)
}, ({ input, output }) => oneLine(withLogging(timeline(input, output)))).pipe(
  Command.withDescription("Draw a recorded session as a handoff timeline (SVG).")
)

const simCommand = Command.make("sim", {
  agents: Flag.String("agents").pipe(
    Flag.withDescription("run the simulation on your agents (a module as for serve --agents) instead of the repository's"),
    Flag.optional
  ),
  seeds: Flag.Int("seeds").pipe(Flag.withDescription("how many seeds to run"), Flag.withDefault(1000)),
  from: Flag.Int("from").pipe(Flag.withDescription("the first seed"), Flag.withDefault(0)),
  seed: Flag.Int("seed").pipe(Flag.withDescription("run one seed: its reproduction, or its event log with --log"), Flag.optional),
  log: Flag.Boolean("log").pipe(Flag.withDescription("with --seed: print the event log"), Flag.withDefault(false)),
  all: Flag.Boolean("all").pipe(Flag.withDescription("include the known core bugs the default runs leave out"), Flag.withDefault(false)),
  noShrink: Flag.Boolean("no-shrink").pipe(Flag.withDescription("do not shrink a failure"), Flag.withDefault(false)),
  target: Flag.String("target").pipe(Flag.withDescription("shrink for the violation whose message contains this text"), Flag.optional),
  fault: Flag.Literals("fault", ["order", "last"]).pipe(
    Flag.withDescription("switch on a protocol fault to see the checker catch it"),
    Flag.optional
  )
}, (flags) => withLogging(Effect.map(sim(flags), (code) => void (exitCode = code)))).pipe(
  Command.withDescription("Run random schedules on your agents (--agents ./agents.mjs) and check the rules; a failure is shrunk and printed as a test.")
)

const workerCommand = Command.make("worker", {
  agents,
  agentName: Flag.String("agent-name").pipe(Flag.withDescription("take only jobs dispatched to this name (default: automatic dispatch to every room)"), Flag.optional),
  maxJobs: Flag.Int("max-jobs").pipe(Flag.withDescription("jobs at once before the worker says it is full (default 500)"), Flag.optional),
  voice
}, (flags) =>
  oneLine(withLogging(Effect.gen(function*() {
    const server = yield* WorkerSettings.settings
    // loaded on use: its LiveKit packages are optional peers of the package
    const { worker } = yield* importPeer(() => import("./LiveKitWorker.ts"), "baton worker", WorkerSettings.peers)
    return yield* worker(flags, server)
  })))).pipe(
  Command.withDescription("Take jobs from a LiveKit server (LIVEKIT_URL, LIVEKIT_API_KEY, LIVEKIT_API_SECRET) and talk in its rooms.")
)

const cli = baton.pipe(Command.withSubcommands([consoleCommand, serveCommand, workerCommand, timelineCommand, simCommand]))

const program = Command.run(cli, { version: VERSION }).pipe(Effect.provide(NodeServices.layer))

NodeRuntime.runMain(program, {
  teardown: (exit, onExit) =>
    exitCode !== 0
      ? onExit(exitCode)
      : Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)
      ? onExit(0)
      : Runtime.defaultTeardown(exit, onExit)
})
