/**
 * The OpenAI chat mock driven by OpenAI's own client (the `openai` SDK's chat completions),
 * pointed at 127.0.0.1: streamed text with usage, a streamed tool call, a whole completion, a
 * wrong key, and the first token held back by `firstTokenMs`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import * as Mock from "./openai-chat/server.ts"

const client = (mock: Mock.ChatMock, apiKey = "sk-test") => new OpenAI({ apiKey, baseURL: mock.baseUrl, maxRetries: 0 })

const respond = (r: Mock.ChatRequest): Mock.ChatAnswer =>
  Mock.toolNames(r).includes("transfer") ? { toolCall: { name: "transfer", arguments: "{\"to\":\"billing\"}" } } : { text: "It will be sunny all day." }

const tools = [{ type: "function" as const, function: { name: "transfer", parameters: { type: "object", properties: { to: { type: "string" } } } } }]

describe("OpenAI chat mock", () => {
  it.live("official client: the openai SDK streams text with its usage, a tool call, and takes a whole completion", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ respond })
      const text = yield* Effect.promise(async () => {
        const stream = await client(mock).chat.completions.create({
          model: "gpt-4.1-mini",
          messages: [{ role: "user", content: "weather?" }],
          stream: true,
          stream_options: { include_usage: true }
        })
        const deltas: Array<string> = []
        let finish: string | null = null
        let usage: OpenAI.CompletionUsage | null | undefined
        for await (const chunk of stream) {
          if (chunk.usage) usage = chunk.usage
          const choice = chunk.choices[0]
          if (choice?.delta.content) deltas.push(choice.delta.content)
          if (choice?.finish_reason) finish = choice.finish_reason
        }
        return { deltas, finish, usage }
      })
      assert.deepStrictEqual(text.deltas, ["It ", "will ", "be ", "sunny ", "all ", "day."])
      assert.strictEqual(text.finish, "stop")
      assert.strictEqual(text.usage?.completion_tokens, 6)

      const call = yield* Effect.promise(async () => {
        const stream = client(mock).chat.completions.stream({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "billing" }], tools })
        return (await stream.finalChatCompletion()).choices[0]!
      })
      assert.strictEqual(call.finish_reason, "tool_calls")
      assert.deepStrictEqual(call.message.tool_calls?.map((c) => c.type === "function" ? [c.function.name, c.function.arguments] : []), [["transfer", "{\"to\":\"billing\"}"]])

      const whole = yield* Effect.promise(() => client(mock).chat.completions.create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "weather?" }] }))
      assert.strictEqual(whole.choices[0]!.message.content, "It will be sunny all day.")
      assert.strictEqual(mock.requests.length, 3)
      assert.deepStrictEqual((yield* Effect.promise(() => client(mock).models.list())).data.map((m) => m.id), ["gpt-4.1-mini"])
    }))

  it.live("official client: the openai SDK sees a wrong key as an AuthenticationError, and the first token comes firstTokenMs late", () =>
    Effect.gen(function*() {
      const mock = yield* Mock.make({ firstTokenMs: 150 })
      const refused = yield* Effect.promise(() =>
        client(mock, "sk-wrong").chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }).then(() => undefined, (e: unknown) => e)
      )
      assert.instanceOf(refused, OpenAI.AuthenticationError)
      assert.strictEqual(mock.refused, 1)
      const waited = yield* Effect.promise(async () => {
        const t0 = performance.now()
        const stream = await client(mock).chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true })
        for await (const chunk of stream) if (chunk.choices[0]?.delta.content) return performance.now() - t0
        return -1
      })
      assert.isAtLeast(waited, 145)
    }))
})
