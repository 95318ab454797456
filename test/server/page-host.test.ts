/**
 * The page carries a Content-Security-Policy, and every loopback address counts as local
 * (issue 33: no CSP on `/`; HOST=127.0.0.2 was refused without a token).
 */
import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { isLoopback } from "../../server/Server.ts"
import { Agent } from "../../src/index.ts"
import { connect, start, wait } from "./harness.ts"

const agent = Agent.make({ name: "front", instructions: "You are the front desk." })
const model = ScriptedModel.layer([{ when: { user: "hello" }, reply: { text: "Hello." } }])

const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`

describe("Server page and host", () => {
  it.live("the page is served with a Content-Security-Policy: its own script and style by hash, nothing else", () =>
    Effect.gen(function*() {
      const server = yield* start(agent, model)
      const response = yield* wait(() => fetch(`${server.url}/`).then(async (r) => ({ csp: r.headers.get("content-security-policy"), body: await r.text() })))
      assert.isNotNull(response.csp)
      const directives = new Map(response.csp!.split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]))
      assert.deepStrictEqual(directives.get("default-src"), ["'none'"])
      const script = /<script>([\s\S]*?)<\/script>/.exec(response.body)![1]!
      const style = /<style>([\s\S]*?)<\/style>/.exec(response.body)![1]!
      assert.deepStrictEqual(directives.get("script-src"), [sha256(script), "blob:"])
      assert.deepStrictEqual(directives.get("style-src"), [sha256(style)])
      assert.deepStrictEqual(directives.get("connect-src"), ["'self'"])
      assert.deepStrictEqual(directives.get("frame-ancestors"), ["'none'"])
      assert.notInclude(response.csp!, "unsafe-inline")
    }).pipe(Effect.scoped))

  it("every address of 127.0.0.0/8, ::1 and localhost is loopback; nothing else is", () => {
    for (const host of ["127.0.0.1", "127.0.0.2", "127.255.255.254", "localhost", "LOCALHOST", "::1", "[::1]", "::ffff:127.0.0.1"]) {
      assert.isTrue(isLoopback(host), host)
    }
    for (const host of ["0.0.0.0", "::", "128.0.0.1", "10.0.0.1", "127.0.0.1.example.com", "127.0.0", "127.0.0.256", ""]) {
      assert.isFalse(isLoopback(host), host)
    }
  })

  it.live("HOST=127.0.0.2 (loopback) serves without a token", () =>
    Effect.gen(function*() {
      const server = yield* start(agent, model, { host: "127.0.0.2" })
      assert.include(server.url, "127.0.0.2")
      const client = yield* connect(`${server.ws}/ws`)
      yield* wait(() => client.waitFor((f) => f.type === "ready"))
    }).pipe(Effect.scoped))
})
