/**
 * Issue 34, "nothing lost" on a deploy: a drain tells a /ws client to reconnect (and another node
 * claims its session from the store) only once the store holds everything the client was told.
 * The store's appends are held at a gate, as a slow PostgreSQL round trip holds them under load:
 * the client heard the agent's answer while the append carrying it was still in flight, and the
 * drain must wait for it instead of sending the client to a node whose claim fences that append
 * (the answer missing from the resumed `history`, seen 1 run in ~5 of crash-resume.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Redacted } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as Call from "../../server/Call.ts"
import { defaults } from "../../server/Config.ts"
import type { ConnectionContext } from "../../server/Connection.ts"
import * as Registry from "../../server/Registry.ts"
import * as Resumer from "../../server/Resumer.ts"
import type * as Token from "../../server/Token.ts"
import { discard } from "../../services/AudioOutput.ts"
import { Resampler } from "../../services/Resampler.ts"
import { makeMemory, type SessionStoreService } from "../../services/SessionStore.ts"
import * as SincResampler from "../../services/SincResampler.ts"
import type { ChatItem } from "../../src/ChatContext.ts"
import { Agent } from "../../src/index.ts"
import * as Journal from "../../src/internal/Journal.ts"

const secret = Redacted.make("k")
const agent = Agent.make({ name: "front", instructions: "You are the front desk." })
const ANSWER = "Sunny in Paris all week."
const models = Layer.merge(SincResampler.layer, ScriptedModel.layer([{ when: { user: "weather in Paris?" }, reply: { text: ANSWER } }]))

/** A memory store whose appends wait at a gate while it is shut (a slow store). */
const gatedStore = () => {
  const inner = makeMemory()
  let gate: Deferred.Deferred<void> | undefined
  let waiting = 0
  const store: SessionStoreService = {
    ...inner,
    append: (claim, entries) =>
      Effect.suspend(() => {
        const shut = gate
        if (shut === undefined) return inner.append(claim, entries)
        waiting++
        return Deferred.await(shut).pipe(Effect.ensuring(Effect.sync(() => void waiting--)), Effect.andThen(inner.append(claim, entries)))
      })
  }
  return {
    inner,
    store,
    shut: Effect.map(Deferred.make<void>(), (d) => void (gate = d)),
    open: Effect.suspend(() => {
      const shut = gate
      gate = undefined
      return shut ? Deferred.succeed(shut, undefined) : Effect.void
    }),
    waiting: () => waiting
  }
}

/** What another node reads when it claims session `id` at this moment (its resume's history). */
const claimedHistory = (store: SessionStoreService, id: string) =>
  Effect.map(Effect.orDie(store.claim(id, "node-b")), ({ session }) => Journal.fold(session.entries).history)

const texts = (items: ReadonlyArray<ChatItem>) =>
  items.flatMap((item) => item._tag === "Message" ? [`${item.role}: ${item.text}${item.interrupted ? " (interrupted)" : ""}`] : [])

/** A reply streamed slowly: a drain starts while it is still being sent. */
const HOURS = ["Our hours ", "are nine ", "to five ", "on weekdays, ", "ten to four ", "on Saturdays, ", "and we are closed ", "on Sundays."]
const slowModels = Layer.merge(
  SincResampler.layer,
  ScriptedModel.layer([{ when: { user: "your hours?" }, reply: { text: HOURS, chunkDelay: "300 millis" } }])
)

/** The connection context of node a (a registry of 10, resumable for 30 s) on `store`. */
const context = (store: SessionStoreService) =>
  Effect.gen(function*() {
    const registry = yield* Registry.make(10)
    const ctx: ConnectionContext = {
      agent,
      userdata: () => undefined,
      options: { ...defaults, resumeSeconds: 30 },
      registry,
      resampler: yield* Resampler,
      realtimeInputRate: 24_000,
      resumer: Resumer.make(secret),
      resumeSecret: secret,
      durable: { store, agents: [agent], owner: "node-a" }
    }
    return { registry, ctx }
  })

describe("a drain moves a client only once the store holds what it was told (issue 34)", () => {
  it.live("the client heard the answer while its append was in flight: it is told to reconnect after the append lands, and the node that claims then has the answer", () =>
    Effect.gen(function*() {
      const slow = gatedStore()
      const { ctx, registry } = yield* context(slow.store)
      const call = yield* Call.open(ctx, secret, true)
      const answered = yield* Deferred.make<void>()
      const moves: Array<{ readonly token: Token.ResumeToken; readonly history: Array<string> }> = []
      const client: Call.Client = {
        audio: discard,
        event: (event) =>
          Effect.sync(() => {
            if (event.type === "speech_finished") Deferred.doneUnsafe(answered, Effect.void)
          }),
        token: () => Effect.void,
        // Told to reconnect: the client goes to node b at once, and node b claims the session.
        move: (token) =>
          Effect.map(claimedHistory(slow.inner, call.id), (history) => {
            moves.push({ token, history: texts(history) })
          }),
        superseded: yield* Deferred.make<void>()
      }
      yield* call.attach(client)
      yield* call.line.session.idle

      yield* slow.shut
      yield* call.line.session.send("weather in Paris?")
      yield* Deferred.await(answered)
      for (let i = 0; i < 1000 && slow.waiting() === 0; i++) yield* Effect.yieldNow
      assert.isAbove(slow.waiting(), 0, "an append is held at the gate: the store does not have the answer the client heard")

      const drained = yield* registry.drain(0, 0, { move: true }).pipe(Effect.forkChild)
      for (let i = 0; i < 1000 && moves.length === 0; i++) yield* Effect.yieldNow
      assert.deepStrictEqual(moves, [], "not told to reconnect while the store does not have what it heard")

      yield* slow.open
      const result = yield* Fiber.join(drained)
      assert.strictEqual(result.moved, 1)
      assert.strictEqual(moves.length, 1)
      assert.strictEqual(moves[0]!.token.sessionId, call.id)
      assert.deepStrictEqual(moves[0]!.history, ["user: weather in Paris?", `assistant: ${ANSWER}`])
      assert.strictEqual(yield* Deferred.await(call.ended), Call.movedReason)
    }).pipe(Effect.scoped, Effect.provide(models)), 20_000)

  it.live("a reply still being sent when the drain starts is cut first, as a barge-in: the words the client got are in the store, marked interrupted, before it is told to reconnect", () =>
    Effect.gen(function*() {
      const slow = gatedStore()
      const { ctx, registry } = yield* context(slow.store)
      const call = yield* Call.open(ctx, secret, true)
      const sent: Array<string> = []
      const replying = yield* Deferred.make<void>()
      const moves: Array<{ readonly sent: string; readonly history: Array<string> }> = []
      const client: Call.Client = {
        audio: discard,
        text: {
          start: () => Effect.void,
          write: (delta) =>
            Effect.sync(() => {
              sent.push(delta)
              if (sent.length === 2) Deferred.doneUnsafe(replying, Effect.void)
            }),
          end: () => Effect.void
        },
        event: () => Effect.void,
        token: () => Effect.void,
        move: () =>
          Effect.map(claimedHistory(slow.inner, call.id), (history) => {
            moves.push({ sent: sent.join(""), history: texts(history) })
          }),
        superseded: yield* Deferred.make<void>()
      }
      yield* call.attach(client)
      yield* call.line.session.idle

      yield* call.line.session.send("your hours?")
      yield* Deferred.await(replying)
      yield* slow.shut
      const drained = yield* registry.drain(0, 0, { move: true }).pipe(Effect.forkChild)
      for (let i = 0; i < 1000 && slow.waiting() === 0 && moves.length === 0; i++) yield* Effect.yieldNow
      assert.deepStrictEqual(moves, [], "not told to reconnect before the words it got are in the store")

      yield* slow.open
      const result = yield* Fiber.join(drained)
      assert.strictEqual(result.moved, 1)
      assert.strictEqual(moves.length, 1)
      const heard = moves[0]!.sent
      assert.isTrue(heard.length > 0 && heard.length < HOURS.join("").length, `the reply was cut part way: ${heard}`)
      assert.deepStrictEqual(moves[0]!.history, ["user: your hours?", `assistant: ${heard} (interrupted)`])
      assert.strictEqual(sent.join(""), heard, "nothing more was sent after the move")
    }).pipe(Effect.scoped, Effect.provide(slowModels)), 20_000)
})
