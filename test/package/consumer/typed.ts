// Type-checked against the shipped .d.ts: the public values, a provider layer, the service.
import { Effect, Layer, Schema } from "effect"
import { Agent, AgentSession, Handoff, RunResult, Tool, type SessionEvent } from "@baton-voice/baton"
import { ConsoleTransport } from "@baton-voice/baton/console"
import { Server } from "@baton-voice/baton/node"
import { OpenAiChat } from "@baton-voice/baton/openai"
import { GeminiLive } from "@baton-voice/baton/google"
import { AudioFrame } from "@baton-voice/baton/services"
import { Diagnostics, ScriptedModel } from "@baton-voice/baton/testing"

const lookup = Tool.make("lookup_weather", {
  description: "The weather in a city",
  parameters: Schema.Struct({ city: Schema.String }),
  handler: ({ city }) => Effect.succeed(`${city}: sunny`)
})
const weather: Agent.Agent = Agent.make({ name: "weather", instructions: "Weather.", tools: [lookup] })
export const greeter = Agent.make({ name: "greeter", instructions: "Greet.", tools: [Tool.handoff("to_weather", () => weather)] })

export const run: Effect.Effect<RunResult.RunResult, unknown, never> = Effect.gen(function*() {
  const session = yield* AgentSession.start({ agent: greeter })
  const events: ReadonlyArray<SessionEvent> = yield* session.eventLog
  void events
  return yield* session.run("hi")
}).pipe(Effect.scoped, Effect.provide(ScriptedModel.layer([])))

export const layers: ReadonlyArray<Layer.Layer<any, any, any>> = [OpenAiChat.layerConfig, GeminiLive.layerConfig, ConsoleTransport.layerNode()]
export const frame = AudioFrame.fromPcm16(new Uint8Array(320), 16_000)
export const counts = Diagnostics.snapshot()
export type Serve = typeof Server.layer
export type H = typeof Handoff
