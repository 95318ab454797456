/**
 * One baton run of the realtime benchmark: an instrumented RealtimeModel (every client operation
 * timestamped), a sub-millisecond Clock, and the session from the greeter's turns to the weather
 * agent's first audio.
 */
import { Clock, Effect } from "effect"
import { OpenAiRealtime } from "../../../layers/openai/OpenAiRealtime.ts"
import { AudioOutput, type AudioOutputService } from "../../../services/AudioOutput.ts"
import { type RealtimeConnection, RealtimeModel } from "../../../services/RealtimeModel.ts"
import { Agent, AgentSession, Handoff, Tool } from "../../../src/index.ts"
import { abs, type Variant } from "./options.ts"
import { GREET, greeterInstructions, INTRO, WEATHER_QUESTION, weatherInstructions } from "./scenario.ts"

export interface ClientOp {
  readonly at: number
  readonly conn: string
  readonly op: string
}

/**
 * The OpenAI provider, with every operation timestamped (right before its frame is written). With
 * `forbidReuse`, the model (and its connections) declare instructions and tools immutable, so the
 * pool cannot give the greeter's connection to the weather agent (their instructions and tools
 * differ: DESIGN rule 7) and opens a fresh one, seeded with the new agent's context.
 */
const instrument = (
  base: RealtimeModel["Service"],
  forbidReuse: boolean,
  ops: Array<ClientOp>
): RealtimeModel["Service"] => {
  const capabilities = forbidReuse ? { ...base.capabilities, mutableInstructions: false, mutableTools: false } : base.capabilities
  let n = 0
  return RealtimeModel.of({
    ...base,
    capabilities,
    connect: (config) =>
      Effect.gen(function*() {
        const id = `c${++n}`
        const stamp = (op: string) => ops.push({ at: abs(), conn: id, op })
        stamp(`connect() called (${config.instructions.startsWith("You are Sunny") ? "weather" : "greeter"}, ${config.chatContext.items.length} items)`)
        // Added before the provider's own finalizers: runs after them (socket closed).
        yield* Effect.addFinalizer(() => Effect.sync(() => stamp("closed")))
        const conn = yield* base.connect(config)
        yield* Effect.addFinalizer(() => Effect.sync(() => stamp("close started")))
        stamp("connect() returned (socket open, session.created, configuration sent)")
        const timed = <A, E>(op: string, effect: Effect.Effect<A, E>) => Effect.suspend(() => (stamp(op), effect))
        const wrapped: RealtimeConnection = {
          ...conn,
          capabilities,
          updateSession: (changes) =>
            timed(`updateSession(${Object.keys(changes).join(", ")})`, conn.updateSession(changes)),
          updateChatContext: (context) => timed(`updateChatContext(${context.items.length} items)`, conn.updateChatContext(context)),
          sendToolOutput: (output) => timed("sendToolOutput", conn.sendToolOutput(output)),
          createResponse: (options) => timed("createResponse", conn.createResponse(options)),
          cancelResponse: (responseId) => timed("cancelResponse", conn.cancelResponse(responseId))
        }
        return wrapped
      })
  })
}

export interface RunSample {
  readonly variant: string
  readonly rep: number
  readonly warmup: boolean
  readonly tag: string
  /** Absolute times (ms on the shared clock). */
  readonly tTool: number
  readonly tHandoff: number
  readonly tFirstAudio: number
  /** Connections opened by the run. */
  readonly opened: number
  /** baton only: client operations, timestamped. */
  readonly ops?: ReadonlyArray<ClientOp>
}

/** A sub-millisecond Clock (event `at` values on the shared clock); sleeping as usual. */
const preciseClock = (base: Clock.Clock): Clock.Clock => ({
  currentTimeMillisUnsafe: abs,
  currentTimeMillis: Effect.sync(abs),
  currentTimeNanosUnsafe: () => base.currentTimeNanosUnsafe(),
  currentTimeNanos: base.currentTimeNanos,
  monotonicTimeNanosUnsafe: () => base.monotonicTimeNanosUnsafe(),
  monotonicTimeNanos: base.monotonicTimeNanos,
  sleep: (duration) => base.sleep(duration)
})

export const batonRun = (url: string, variant: Variant, rep: number, warmup: boolean, turns: number) =>
  Effect.gen(function*() {
    const tag = `baton ${variant.connection}/${variant.context} #${rep}${warmup ? "w" : ""}`
    const ops: Array<ClientOp> = []
    const model = instrument(OpenAiRealtime.make({ url }), variant.connection === "fresh", ops)
    let tTool = Number.NaN
    let tFirstAudio = Number.NaN
    const audio: AudioOutputService = {
      write: (_pcm, _rate, info) =>
        Effect.sync(() => {
          if (info.agent === "weather" && Number.isNaN(tFirstAudio)) tFirstAudio = abs()
        }),
      clear: () => Effect.void
    }
    const weather: Agent.Agent = Agent.make({
      name: "weather",
      instructions: weatherInstructions(tag),
      tools: [
        Tool.make("lookup_weather", { description: "Weather for a city", handler: () => Effect.succeed("sunny") }),
        Tool.handoff("transfer_to_greeter", () => greeter)
      ],
      onEnter: Agent.reply({ instructions: INTRO }).pipe(Effect.asVoid)
    })
    const greeter: Agent.Agent = Agent.make({
      name: "greeter",
      instructions: greeterInstructions(tag),
      tools: [
        Tool.make("transfer_to_weather", {
          description: "Transfer to the weather agent when the user asks about weather.",
          handler: () =>
            Effect.sync(() => {
              tTool = abs()
              return Handoff.to(weather, { context: variant.context })
            })
        })
      ],
      onEnter: Agent.reply({ instructions: GREET }).pipe(Effect.asVoid)
    })
    const base = yield* Clock.Clock
    return yield* Effect.scoped(Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: greeter })
      yield* session.idle
      for (let i = 1; i <= turns; i++) yield* session.run(`Turn ${i}: tell me something nice.`)
      const result = yield* session.run(WEATHER_QUESTION)
      const handoff = result.sessionEvents.find((e) => e.type === "agent_handoff" && e.to === "weather")
      if (!handoff) return yield* Effect.fail(new Error(`${tag}: no handoff to weather`))
      if (Number.isNaN(tFirstAudio)) return yield* Effect.fail(new Error(`${tag}: the weather agent never spoke`))
      const stats = session.realtime()
      const expected = variant.connection === "reuse" ? 1 : 2
      if (stats?.opened !== expected) {
        return yield* Effect.fail(new Error(`${tag}: ${stats?.opened} connections opened, expected ${expected}`))
      }
      const sample: RunSample = {
        variant: variant.name,
        rep,
        warmup,
        tag,
        tTool,
        tHandoff: handoff.at,
        tFirstAudio,
        opened: stats.opened,
        ops
      }
      return sample
    })).pipe(
      Effect.provideService(RealtimeModel, model),
      Effect.provideService(AudioOutput, audio),
      Effect.provideService(Clock.Clock, preciseClock(base))
    )
  })
