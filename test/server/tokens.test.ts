/**
 * Tokens are exact, scoped to their route, and the shared secret is never one (issue 33).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as Token from "../../server/Token.ts"
import { Agent } from "../../src/index.ts"
import { connect, start, wait } from "./harness.ts"

const secret = "s3cret-for-test"
const agent = Agent.make({ name: "front", instructions: "You are the front desk." })
const model = ScriptedModel.layer([{ when: { user: "hello" }, reply: { text: "Hello." } }])

const mint = (url: string, route?: string) =>
  wait(() =>
    fetch(`${url}/token${route === undefined ? "" : `?route=${route}`}`, { method: "POST", headers: { authorization: `Bearer ${secret}` } })
      .then((r) => r.json() as Promise<{ token: string }>)
  )

describe("Server tokens", () => {
  it("a token with anything after its signature is malformed, however base64 would decode it", () => {
    const key = Redacted.make("k")
    const { token } = Token.mint(key, 60, 1_000_000)
    assert.strictEqual(Token.verify(key, token, "ws", 1_000_000), "ok")
    for (const tail of ["!!", "=", " ", "A", "\n"]) {
      assert.notStrictEqual(Token.verify(key, token + tail, "ws", 1_000_000), "ok", JSON.stringify(tail))
    }
    assert.notStrictEqual(Token.verify(key, ` ${token}`, "ws", 1_000_000), "ok")
  })

  it("a token verifies for the route it was minted for only", () => {
    const key = Redacted.make("k")
    const ws = Token.mint(key, 60, 1_000_000, "ws").token
    const twilio = Token.mint(key, 60, 1_000_000, "twilio").token
    assert.strictEqual(Token.verify(key, ws, "twilio", 1_000_000), "for another route")
    assert.strictEqual(Token.verify(key, twilio, "ws", 1_000_000), "for another route")
    assert.strictEqual(Token.verify(key, twilio, "twilio", 1_000_000), "ok")
    // the route is signed: renaming it breaks the signature
    assert.strictEqual(Token.verify(key, ws.replace(/^ws\./, "twilio."), "twilio", 1_000_000), "bad signature")
  })

  it("the secret is recognised only as itself, at any length", () => {
    const key = Redacted.make(secret)
    assert.isTrue(Token.isSecret(key, secret))
    for (const other of ["", "s", `${secret}!`, secret.slice(0, -1), secret.toUpperCase()]) assert.isFalse(Token.isSecret(key, other))
  })

  it.live("the shared secret is refused as a token on /ws and /twilio (it would end up in URLs and logs)", () =>
    Effect.gen(function*() {
      const server = yield* start(agent, model, { secret })
      for (const route of ["ws", "twilio"]) {
        const viaQuery = yield* connect(`${server.ws}/${route}?token=${secret}`).pipe(Effect.flip)
        assert.match(viaQuery.message, /HTTP 401/)
        const viaHeader = yield* connect(`${server.ws}/${route}`, { authorization: `Bearer ${secret}` }).pipe(Effect.flip)
        assert.match(viaHeader.message, /HTTP 401/)
      }
    }).pipe(Effect.scoped))

  it.live("a minted token with characters after it is refused (<token>!!)", () =>
    Effect.gen(function*() {
      const server = yield* start(agent, model, { secret })
      const { token } = yield* mint(server.url)
      const tampered = yield* connect(`${server.ws}/ws?token=${token}!!`).pipe(Effect.flip)
      assert.match(tampered.message, /HTTP 401/)
      const exact = yield* connect(`${server.ws}/ws?token=${token}`)
      yield* wait(() => exact.waitFor((f) => f.type === "ready"))
    }).pipe(Effect.scoped))

  it.live("a /ws token does not open /twilio; a token minted for /twilio does, and not /ws", () =>
    Effect.gen(function*() {
      const server = yield* start(agent, model, { secret })
      const ws = yield* mint(server.url)
      const wrong = yield* connect(`${server.ws}/twilio?token=${ws.token}`).pipe(Effect.flip)
      assert.match(wrong.message, /HTTP 401/)
      const twilio = yield* mint(server.url, "twilio")
      yield* connect(`${server.ws}/twilio?token=${twilio.token}`)
      const back = yield* connect(`${server.ws}/ws?token=${twilio.token}`).pipe(Effect.flip)
      assert.match(back.message, /HTTP 401/)
      const unknown = yield* wait(() => fetch(`${server.url}/token?route=admin`, { method: "POST", headers: { authorization: `Bearer ${secret}` } }))
      assert.strictEqual(unknown.status, 400)
    }).pipe(Effect.scoped))
})
