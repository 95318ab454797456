/**
 * Typing over the agent (issue 39): a typed turn while the agent says the words before its tool
 * calls ("Let me check Paris.") cuts those words, not the calls: the model made them, so they
 * run (as LiveKit's text input leaves tools that already started to run on); the follow-up is
 * cut and the typed turn is answered after them, with their outputs in the context.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Schema } from "effect"
import { drive, until } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { TextOutput } from "../../services/TextOutput.ts"
import { Agent, AgentSession, Tool } from "../../src/index.ts"

describe("a typed turn over the words before the reply's tool calls", () => {
  it.effect("cuts the words (recorded as heard, marked interrupted); the tool calls run; the typed turn is answered after them", () =>
    Effect.gen(function*() {
      const looked: Array<string> = []
      const agent = Agent.make({
        name: "sunny",
        instructions: "You are the weather desk.",
        tools: [Tool.make("lookup_weather", {
          description: "the weather of a city",
          parameters: Schema.Struct({ city: Schema.String }),
          handler: ({ city }) => Effect.sync(() => (looked.push(city), `${city}: sunny, 21°C`))
        })]
      })
      // a voice output whose first words play until they are cut (the drain never ends on its own)
      const playing = yield* Deferred.make<void>()
      let cleared = 0
      let drains = 0
      const output = Layer.succeed(TextOutput, {
        start: () => Effect.void,
        write: () => Effect.void,
        end: (_info, interrupted) => Effect.sync(() => interrupted && cleared++),
        drain: () => Effect.suspend(() => (drains++ === 0 ? Deferred.await(playing) : Effect.void)),
        heard: () => "Let me"
      })
      const models = ScriptedModel.layer([
        { when: { user: "weather in Paris" }, reply: { text: "Let me check Paris.", toolCalls: [{ name: "lookup_weather", arguments: { city: "Paris" } }] } },
        { when: { user: "is it windy" }, reply: { text: "Not windy." } },
        { when: () => true, reply: { text: "It is sunny in Paris." } }
      ])
      yield* Effect.gen(function*() {
        const session = yield* AgentSession.start({ agent })
        yield* session.send("weather in Paris")
        yield* until(() => drains > 0)
        yield* session.send("is it windy?")
        yield* drive(session.idle)
        assert.deepStrictEqual(looked, ["Paris"], "the call the model made ran")
        assert.strictEqual(cleared, 1, "the words were cut")
        const history = yield* session.history
        const shown = history.items.flatMap((i) =>
          i._tag === "Message"
            ? [`${i.role}:${i.text}${i.interrupted ? "~" : ""}`]
            : i._tag === "FunctionCall"
            ? [`call:${i.name}`]
            : i._tag === "FunctionCallOutput"
            ? [`output:${i.output}`]
            : []
        )
        assert.deepStrictEqual(shown.slice(-5), [
          "assistant:Let me~",
          "call:lookup_weather",
          "output:Paris: sunny, 21°C",
          "user:is it windy?",
          "assistant:Not windy."
        ])
      }).pipe(Effect.provide(Layer.merge(models, output)))
    }))
})
