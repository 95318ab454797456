/**
 * The direct part path (services/ModelParts.ts) must be invisible: a provider that carries it
 * and the same provider without it (reached through `LanguageModel.streamText`) get the same
 * requests and produce the same conversation, bad tool calls included.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schema, Stream } from "effect"
import { LanguageModel, type Response } from "effect/ai"
import { FetchHttpClient } from "effect/http"
import { OpenAiChat } from "../../layers/openai/OpenAiChat.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as ModelParts from "../../services/ModelParts.ts"
import { Agent, AgentSession, Handoff, Tool } from "../../src/index.ts"

const usage = { inputTokens: { total: 1 }, outputTokens: { total: 1 } }
const call = (id: string, name: string, params: unknown): Response.StreamPartEncoded => ({ type: "tool-call", id, name, params })
const finish = (reason: "stop" | "tool-calls"): Response.StreamPartEncoded => ({ type: "finish", reason, usage })
const say = (text: string): ReadonlyArray<Response.StreamPartEncoded> => [
  { type: "text-start", id: "t" },
  { type: "text-delta", id: "t", delta: text },
  { type: "text-end", id: "t" },
  finish("stop")
]

/** The responses of one conversation, in order; each request is recorded as the provider saw it. */
const script: ReadonlyArray<ReadonlyArray<Response.StreamPartEncoded>> = [
  // the front desk: a good call, bad arguments, an unknown tool, and a string of arguments
  [
    call("c1", "lookup", { city: "Paris" }),
    call("c2", "lookup", { town: 3 }),
    call("c3", "no_such_tool", {}),
    call("c4", "lookup", "{\"city\":\"Rome\"}"),
    finish("tool-calls")
  ],
  say("Paris is sunny, Rome too."),
  // a reply restricted to one tool (`oneOf`), which hands off
  [call("c5", "transfer", {}), finish("tool-calls")],
  // the specialist has no tools at all
  say("Specialist here.")
]

interface Seen {
  readonly tools: ReadonlyArray<string>
  readonly toolChoice: unknown
  readonly responseFormat: string
  readonly validation: string | undefined
  readonly messages: ReadonlyArray<{ readonly role: string; readonly parts: number }>
  readonly spanName: string
}

const provider = () => {
  const seen: Array<Seen> = []
  const streamText = (options: LanguageModel.ProviderOptions) => {
    seen.push({
      tools: options.tools.map((tool) => tool.name),
      toolChoice: options.toolChoice,
      responseFormat: options.responseFormat.type,
      validation: options.toolCallValidation,
      messages: options.prompt.content.map((m) => ({ role: m.role, parts: typeof m.content === "string" ? 0 : m.content.length })),
      spanName: options.span.name
    })
    return Stream.fromIterable(script[seen.length - 1] ?? say("(no more)"))
  }
  return { seen, streamText }
}

const conversation = (direct: boolean) =>
  Effect.scoped(Effect.gen(function*() {
    const { seen, streamText } = provider()
    const made = yield* LanguageModel.make({ streamText, generateText: () => Effect.die("not used") })
    const model = direct ? ModelParts.withParts(made, streamText) : made
    assert.strictEqual(ModelParts.partsOf(model) !== undefined, direct)
    const specialist = Agent.make({ name: "specialist", instructions: "You are the specialist.", onEnter: Agent.reply() })
    const desk = Agent.make({
      name: "desk",
      instructions: "You are the desk.",
      tools: [
        Tool.make("lookup", {
          description: "Weather for a city",
          parameters: Schema.Struct({ city: Schema.String }),
          handler: ({ city }) => Effect.succeed(`sunny in ${city}`)
        }),
        Tool.make("transfer", { description: "Transfer", handler: () => Effect.succeed(Handoff.to(specialist)) })
      ]
    })
    const session = yield* AgentSession.start({ agent: desk }).pipe(Effect.provideService(LanguageModel.LanguageModel, model))
    yield* session.run("weather?")
    yield* session.generateReply({ toolChoice: { oneOf: ["transfer"] } })
    yield* session.idle
    const history = (yield* session.history).items.map((item) => {
      switch (item._tag) {
        case "Message":
          return `${item.role} ${item.agent}: ${item.text}`
        case "FunctionCall":
          return `call ${item.name} ${item.arguments}`
        case "FunctionCallOutput":
          return `output ${item.name} [${item.status}] ${item.output}`
        case "AgentHandoff":
          return `handoff ${item.from} -> ${item.to}`
      }
    })
    return { seen, history }
  }))

describe("ModelParts", () => {
  it.effect("the direct path and streamText give the provider the same requests and the session the same conversation", () =>
    Effect.gen(function*() {
      const viaStreamText = yield* conversation(false)
      const direct = yield* conversation(true)
      assert.deepStrictEqual(direct.seen, viaStreamText.seen)
      assert.deepStrictEqual(direct.history, viaStreamText.history)
      // what both saw, so the comparison is not between two empty runs
      assert.strictEqual(direct.seen.length, 4)
      assert.deepStrictEqual(direct.seen[0]!.tools, ["lookup", "transfer"])
      assert.strictEqual(direct.seen[0]!.validation, "deferred")
      assert.strictEqual(direct.seen[0]!.spanName, "LanguageModel.streamText")
      assert.deepStrictEqual(direct.seen[2]!.tools, ["transfer"])
      assert.deepStrictEqual(direct.seen[3]!.tools, [])
      assert.strictEqual(direct.seen[3]!.toolChoice, "none")
      const outputs = direct.history.filter((line) => line.startsWith("output"))
      assert.match(outputs[0]!, /^output lookup \[ok\] sunny in Paris/)
      assert.match(outputs[1]!, /^output lookup \[error\]/)
      assert.match(outputs[2]!, /^output no_such_tool \[error\] Unknown tool/)
      assert.match(outputs[3]!, /^output lookup \[ok\] sunny in Rome/)
      assert.include(direct.history, "handoff desk -> specialist")
      assert.include(direct.history, "assistant specialist: Specialist here.")
    }))

  it.effect("baton's own model layers carry the direct path", () =>
    Effect.gen(function*() {
      const scripted = yield* Effect.scoped(Layer.build(ScriptedModel.layer([])))
      assert.isDefined(ModelParts.partsOf(scripted.mapUnsafe.get(LanguageModel.LanguageModel.key) as LanguageModel.LanguageModel))
      const openai = yield* OpenAiChat.make({ model: "m", apiKey: Redacted.make("k"), baseUrl: "http://127.0.0.1:9" }).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      assert.isDefined(ModelParts.partsOf(openai))
    }))
})
