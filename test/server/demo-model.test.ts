/**
 * `baton serve` on the demo model: a served model holds nothing per request (issue 33). The
 * demo's `ScriptedModel` recorded every request with its whole prompt until the process exited.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { greeter } from "../../examples/front-desk/agents.ts"
import * as DemoModel from "../../examples/front-desk/demoModel.ts"
import { ScriptedModel } from "../../layers/testing/ScriptedModel.ts"
import { connect, start, wait } from "./harness.ts"

describe("Server on the demo model", () => {
  it.live("a served demo model keeps no request after answering turns", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(DemoModel.layer())
      const recorder = Context.get(context, ScriptedModel)
      const server = yield* start(greeter, Layer.succeedContext(context))
      const client = yield* connect(`${server.ws}/ws`)
      yield* wait(() => client.waitFor((f) => f.type === "ready"))
      for (const text of ["hello", "what's the weather in Oslo?"]) {
        const answered = client.frames.filter((f) => f.type === "speech_finished").length
        client.sendJson({ type: "user_text", text })
        yield* wait(() => client.waitFor(() => client.frames.filter((f) => f.type === "speech_finished").length > answered, "a reply"))
      }
      assert.isAbove(client.frames.filter((f) => f.type === "model_call").length, 0)
      assert.strictEqual(recorder.requests.length, 0)
    }).pipe(Effect.scoped))

})
