/**
 * The realtime pool alone (src/internal/realtime/Pool.ts) over a fake `RealtimeModel` that
 * records what each connection is asked and lets the test play the server's events: reuse and
 * its refusal (rule 7), revocation, the cancel of what a released holder asked for (sent by the
 * connection's own fiber, inside the session's Scope), the fallback on an error answer, and what
 * the user says between two holders (rule 8's other side: it is kept for the next one).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option, Queue, Scope, Stream } from "effect"
import type { Ack, RealtimeCapabilities, RealtimeConnection, RealtimeEvent } from "../../../../services/RealtimeModel.ts"
import { RealtimeError } from "../../../../services/RealtimeModel.ts"
import { ChatContext, message } from "../../../../src/ChatContext.ts"
import * as Lease from "../../../../src/internal/realtime/Lease.ts"
import * as Pool from "../../../../src/internal/realtime/Pool.ts"
import { openAiLike } from "../../../../layers/testing/ScriptedRealtime.ts"

const capabilities: RealtimeCapabilities = openAiLike

interface FakeConnection {
  readonly id: string
  readonly calls: Array<string>
  readonly server: Queue.Queue<RealtimeEvent>
  /** Answers the next acknowledgement this connection hands out. */
  readonly acks: Array<Deferred.Deferred<void, RealtimeError>>
  closed: boolean
}

const fakeModel = (caps: RealtimeCapabilities = capabilities, updates?: Deferred.Deferred<void>) => {
  const connections: Array<FakeConnection> = []
  const model = {
    provider: "fake",
    model: "fake-1",
    capabilities: caps,
    connect: (config: { readonly instructions: string; readonly pipelined?: boolean | undefined }) =>
      Effect.gen(function*() {
        const server = yield* Queue.unbounded<RealtimeEvent>()
        const fake: FakeConnection = { id: `conn-${connections.length + 1}`, calls: [], server, acks: [], closed: false }
        connections.push(fake)
        fake.calls.push(`connect ${config.instructions}${config.pipelined ? " (pipelined)" : ""}`)
        yield* Effect.addFinalizer(() => Effect.sync(() => (fake.closed = true)))
        const ack = (what: string) =>
          Effect.sync((): Ack => {
            fake.calls.push(what)
            const answer = Deferred.makeUnsafe<void, RealtimeError>()
            fake.acks.push(answer)
            return { await: Deferred.await(answer) }
          })
        const record = (what: string) => Effect.sync(() => void fake.calls.push(what))
        const connection: RealtimeConnection = {
          id: fake.id,
          provider: "fake",
          model: "fake-1",
          capabilities: caps,
          events: Stream.fromQueue(server),
          // With `updates`, an update waits for it before it is sent (a slow socket write).
          updateSession: (changes) =>
            Effect.andThen(updates ? Deferred.await(updates) : Effect.void, ack(`updateSession ${changes.instructions ?? ""}`)),
          updateChatContext: (context) => ack(`updateChatContext ${context.items.length}`),
          sendToolOutput: (output) => ack(`sendToolOutput ${output.callId}`),
          createResponse: () => record("createResponse"),
          cancelResponse: (id) => record(`cancelResponse ${id ?? "(current)"}`),
          truncate: (itemId) => record(`truncate ${itemId}`),
          pushAudio: () => record("pushAudio"),
          commitAudio: record("commitAudio"),
          clearAudio: record("clearAudio")
        }
        return connection
      })
  }
  return { model, connections }
}

const desired = (instructions: string, context = ChatContext.empty): Lease.Desired => ({ instructions, tools: [], context })

const setup = (caps?: RealtimeCapabilities, updates?: Deferred.Deferred<void>) =>
  Effect.gen(function*() {
    const fake = fakeModel(caps, updates)
    const scope = yield* Scope.make()
    const reports: Array<string> = []
    const ended: Array<string> = []
    const pool = yield* Pool.make({
      model: fake.model,
      parent: scope,
      now: () => Date.now(),
      ended: (id) => void ended.push(id),
      report: (owner, id, action) => void reports.push(`${owner} ${id} ${action}`)
    })
    return { ...fake, pool, scope, reports, ended }
  })

/** Lets the pool's fibers (router, canceller, watchers) run. */
const settleFibers = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

describe("realtime pool (rule 7)", () => {
  it.effect("a fresh connection is configured pipelined; the next holder reuses it with updates", () =>
    Effect.gen(function*() {
      const { pool, connections, reports, scope } = yield* setup()
      const a = yield* Pool.acquire(pool, "A", desired("be A"))
      assert.isFalse(a.reused)
      assert.deepStrictEqual(connections[0]!.calls, ["connect be A (pipelined)"])
      Pool.release(pool, a)
      assert.strictEqual(Lease.revoked(a), "released")
      const b = yield* Pool.acquire(pool, "B", desired("be B", ChatContext.empty.append(message("user", "hi"))))
      assert.isTrue(b.reused)
      assert.strictEqual(b.connectionId, a.connectionId)
      assert.deepStrictEqual(connections[0]!.calls.slice(1), ["updateSession be B", "updateChatContext 1"])
      assert.deepStrictEqual(reports, ["A conn-1 opened", "B conn-1 reused", "B conn-1 updated"])
      // The released lease can do nothing on the connection any more.
      const refused = yield* Effect.flip(Lease.createResponse(a, {}, Lease.ticket(a)))
      assert.strictEqual(refused.reason, "revoked")
      yield* Scope.close(scope, Exit.void)
      assert.isTrue(connections[0]!.closed)
    }))

  it.effect("item 9: a lease whose sync is interrupted (a barge-in cut the reply there) leaves its connection free", () =>
    Effect.gen(function*() {
      const updates = yield* Deferred.make<void>()
      const { pool, connections, scope } = yield* setup(capabilities, updates)
      Pool.release(pool, yield* Pool.acquire(pool, "A", desired("be A")))
      // B's reuse sends B's instructions; the write hangs, and B's reply is cut there.
      const taking = yield* Effect.forkChild(Pool.acquire(pool, "B", desired("be B")))
      yield* settleFibers
      yield* Fiber.interrupt(taking)
      yield* Deferred.succeed(updates, undefined)
      // Nobody holds the connection: the next holder reuses it.
      const c = yield* Pool.acquire(pool, "C", desired("be C"))
      assert.isTrue(c.reused)
      assert.strictEqual(c.connectionId, connections[0]!.id)
      assert.strictEqual(connections.length, 1)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a model that cannot change its instructions gets a fresh connection; the old one closes", () =>
    Effect.gen(function*() {
      const { pool, connections, scope } = yield* setup({ ...capabilities, mutableInstructions: false })
      Pool.release(pool, yield* Pool.acquire(pool, "A", desired("be A")))
      const b = yield* Pool.acquire(pool, "B", desired("be B"))
      assert.isFalse(b.reused)
      yield* settleFibers
      assert.strictEqual(connections.length, 2)
      assert.isTrue(connections[0]!.closed)
      assert.deepStrictEqual(Pool.stats(pool), { open: 1, opened: 2 })
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("a release cancels the running response from the connection's own fiber; its events reach no one", () =>
    Effect.gen(function*() {
      const { pool, connections, scope } = yield* setup()
      const a = yield* Pool.acquire(pool, "A", desired("be A"))
      yield* Lease.createResponse(a, {}, Lease.ticket(a))
      const conn = connections[0]!
      yield* Queue.offer(conn.server, { _tag: "ResponseStarted", responseId: "r1" })
      yield* settleFibers
      assert.strictEqual((yield* Queue.take(a.events))._tag, "ResponseStarted")
      Pool.release(pool, a)
      yield* settleFibers
      assert.include(conn.calls, "cancelResponse r1")
      // The next holder's configuration waits until the server is done with the cut response.
      const taking = yield* Effect.forkChild(Pool.acquire(pool, "B", desired("be A")))
      yield* settleFibers
      assert.isUndefined(taking.pollUnsafe())
      yield* Queue.offer(conn.server, { _tag: "TextDelta", responseId: "r1", itemId: "i1", delta: "late" })
      yield* Queue.offer(conn.server, { _tag: "ResponseDone", responseId: "r1", status: "cancelled" })
      const b = yield* Fiber.join(taking)
      yield* Queue.offer(conn.server, { _tag: "SpeechStarted" })
      yield* settleFibers
      // Only the user's event reaches the new holder.
      assert.strictEqual((yield* Queue.take(b.events))._tag, "SpeechStarted")
      assert.strictEqual(Option.isNone(yield* Queue.poll(b.events)), true)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("an error answer to an update falls back: the lease is revoked, the connection closed, reported with the next", () =>
    Effect.gen(function*() {
      const { pool, connections, reports, scope } = yield* setup()
      Pool.release(pool, yield* Pool.acquire(pool, "A", desired("be A")))
      const b = yield* Pool.acquire(pool, "B", desired("be B"))
      const conn = connections[0]!
      // The answers to B's session update and context update: the first is refused.
      yield* Deferred.fail(conn.acks[0]!, new RealtimeError({ reason: "rejected", message: "no" }))
      yield* settleFibers
      assert.strictEqual(Lease.revoked(b), "fallback")
      assert.isTrue(conn.closed)
      const again = yield* Pool.acquire(pool, "B", desired("be B"))
      assert.isFalse(again.reused)
      assert.deepStrictEqual(reports.slice(-2), ["B conn-1 fell_back", "B conn-2 opened"])
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("what the user says between holders is kept for the next one, in order; a transcript follows to a fresh connection", () =>
    Effect.gen(function*() {
      const { pool, connections, ended, scope } = yield* setup({ ...capabilities, mutableInstructions: false })
      Pool.release(pool, yield* Pool.acquire(pool, "A", desired("be A")))
      const conn = connections[0]!
      yield* Queue.offer(conn.server, { _tag: "SpeechStarted" })
      yield* Queue.offer(conn.server, { _tag: "SpeechStopped" })
      yield* Queue.offer(conn.server, { _tag: "InputTranscript", itemId: "u1", text: "I need help", final: true })
      yield* settleFibers
      // Heard stopping with no holder: the session is told the user's turn ended.
      assert.deepStrictEqual(ended, ["conn-1"])
      // Not reusable (new instructions): the connection closes, the final transcript moves.
      const b = yield* Pool.acquire(pool, "B", desired("be B"))
      assert.notStrictEqual(b.connectionId, conn.id)
      const first = yield* Queue.take(b.events)
      assert.deepStrictEqual(first, { _tag: "InputTranscript", itemId: "u1", text: "I need help", final: true })
      yield* Scope.close(scope, Exit.void)
    }))
})
