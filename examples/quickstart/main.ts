/**
 * The README's example: two agents handing off, on a real model.
 *   OPENAI_API_KEY=sk-... npx node examples/quickstart/main.ts
 *   OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.1 npx node examples/quickstart/main.ts
 */
import { Effect } from "effect"
import { OpenAiChat } from "../../layers/openai/OpenAiChat.ts"
import { AgentSession } from "../../src/index.ts"
import { greeter } from "./agents.ts"

export const main = Effect.gen(function*() {
  const session = yield* AgentSession.start({ agent: greeter })
  const result = yield* session.run("What's the weather in Paris?")
  console.log(result.toString()) // every item and handoff of the whole cascade
  return result
}).pipe(Effect.scoped)

if (import.meta.main) Effect.runPromise(main.pipe(Effect.provide(OpenAiChat.layerConfigFetch))).catch((e) => {
  console.error(String(e))
  process.exitCode = 1
})
