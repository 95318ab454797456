/**
 * The user is away (issue 37): no word from them for `userAwayTimeout` while the agent waits
 * makes `user_state_changed` `away` and runs the holder's `onUserAway`; they come back by speaking
 * or typing. Under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, type SessionEvent } from "../../src/index.ts"
import { Layer } from "effect"

const userStates = (events: ReadonlyArray<SessionEvent>) =>
  events.flatMap((e) => (e.type === "user_state_changed" ? [e.state] : []))

/** Lets the watcher's fibers see what happened (the event stream is read in a fiber of its own). */
const settle = Effect.gen(function*() {
  for (let i = 0; i < 5; i++) yield* Effect.yieldNow
})

const model = ScriptedModel.layer([{ when: { agent: "desk" }, reply: { text: "Sure." } }])

describe("user away", () => {
  it.effect("user away: after userAwayTimeout of silence the state is away and onUserAway runs, not a moment before", () => {
    const ran: Array<number> = []
    const desk = Agent.make({
      name: "desk",
      instructions: "Help.",
      onUserAway: (away) => Effect.sync(() => void ran.push(away.times))
    })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: desk, userAwayTimeout: "10 seconds" })
      yield* session.run("hello")
      yield* settle
      yield* TestClock.adjust("9999 millis")
      yield* settle
      assert.deepStrictEqual(userStates(yield* session.eventLog), [])
      assert.deepStrictEqual(ran, [])
      yield* TestClock.adjust("1 millis")
      yield* settle
      yield* session.idle
      assert.deepStrictEqual(userStates(yield* session.eventLog), ["away"])
      assert.deepStrictEqual(ran, [1])
      // It said nothing: no second run however long the silence.
      yield* TestClock.adjust("1 minute")
      yield* settle
      assert.deepStrictEqual(ran, [1])
    }).pipe(Effect.provide(model))
  })

  it.effect("user away: the hook asks 'are you still there?', then ends the session on the second silence", () => {
    const desk = Agent.make({
      name: "desk",
      instructions: "Help.",
      onUserAway: (away) =>
        away.times === 1
          ? Agent.say("Are you still there?").pipe(Effect.asVoid)
          : Agent.CurrentAgent.use((agent) => agent.session.close)
    })
    return Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: desk, userAwayTimeout: "5 seconds" })
      yield* session.run("hello")
      yield* settle
      yield* TestClock.adjust("5 seconds")
      yield* settle
      yield* session.idle
      assert.deepStrictEqual(capture.writes.map((w) => w.text), ["Sure.", "Are you still there?"])
      assert.isFalse(yield* session.closed)
      yield* settle
      yield* TestClock.adjust("5 seconds")
      yield* settle
      yield* session.awaitClosed
      assert.deepStrictEqual(userStates(yield* session.eventLog), ["away"])
    }).pipe(Effect.provide(Layer.mergeAll(model, TextCapture.layer)))
  })

  it.effect("user away: a typed turn brings the user back (listening) and the wait starts over", () => {
    const ran: Array<number> = []
    const desk = Agent.make({ name: "desk", instructions: "Help.", onUserAway: (away) => Effect.sync(() => void ran.push(away.times)) })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: desk, userAwayTimeout: "10 seconds" })
      yield* settle
      yield* TestClock.adjust("10 seconds")
      yield* settle
      yield* session.idle
      yield* session.run("I'm here")
      yield* settle
      assert.deepStrictEqual(userStates(yield* session.eventLog), ["away", "listening"])
      yield* TestClock.adjust("10 seconds")
      yield* settle
      yield* session.idle
      assert.deepStrictEqual(userStates(yield* session.eventLog), ["away", "listening", "away"])
      assert.deepStrictEqual(ran, [1, 1])
    }).pipe(Effect.provide(model))
  })

  it.effect("user away: no away while the user is speaking, however long they speak", () => {
    const desk = Agent.make({ name: "desk", instructions: "Help." })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: desk, userAwayTimeout: "10 seconds" })
      yield* settle
      yield* session.setUserSpeaking(true)
      yield* settle
      yield* TestClock.adjust("1 minute")
      yield* settle
      assert.deepStrictEqual(userStates(yield* session.eventLog), ["speaking"])
      yield* session.setUserSpeaking(false)
      yield* settle
      yield* TestClock.adjust("10 seconds")
      yield* settle
      assert.deepStrictEqual(userStates(yield* session.eventLog), ["speaking", "listening", "away"])
    }).pipe(Effect.provide(model))
  })

  it.effect("user away: without userAwayTimeout the user is never away", () => {
    const desk = Agent.make({ name: "desk", instructions: "Help.", onUserAway: () => Effect.die("must not run") })
    return Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: desk })
      yield* session.run("hello")
      yield* TestClock.adjust("1 hour")
      yield* settle
      assert.deepStrictEqual(userStates(yield* session.eventLog), [])
    }).pipe(Effect.provide(model))
  })
})
