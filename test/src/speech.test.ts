/**
 * Speech: each reply is one fiber; interrupting it keeps exactly what was delivered.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { drive, until } from "../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { Agent, AgentSession } from "../../src/index.ts"

const agent = Agent.make({ name: "talker", instructions: "You talk a lot." })
const story = ["It ", "was ", "a ", "dark ", "and ", "stormy ", "night."]
const layers = Layer.mergeAll(
  ScriptedModel.layer([
    { when: { user: "story" }, reply: { text: story, chunkDelay: "100 millis" } },
    { when: { user: "stop" }, reply: { text: "Okay, stopping." } },
    { when: { instructions: "say hi" }, reply: { text: "Hi there!" } }
  ]),
  TextCapture.layer
)

describe("speech", () => {
  it.effect("interrupt stops the reply; history keeps what was delivered", () =>
    Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent })
      const run = yield* session.run("tell me a story").pipe(Effect.forkChild)
      yield* until(() => text.textOf("talker").length >= "It was a ".length)
      yield* session.interrupt
      const result = yield* drive(Fiber.join(run))
      const said = text.textOf("talker")
      const message = result.expect.containsMessage({ role: "assistant" })
      assert.isTrue(message.interrupted)
      assert.strictEqual(message.content, said)
      assert.isTrue(said.length < story.join("").length)
      const finished = result.sessionEvents.find((e) => e.type === "speech_finished")
      assert.isTrue(finished?.type === "speech_finished" && finished.interrupted)
    }).pipe(Effect.provide(layers)))

  it.effect("the user speaking interrupts the reply and gets the next one", () =>
    Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent })
      yield* session.send("tell me a story")
      yield* until(() => text.textOf("talker").length > 0)
      // run() would first wait for the story to end: barging in is send().
      yield* session.send("stop please")
      yield* drive(session.idle)
      const history = yield* session.history
      const messages = history.items.flatMap((i) => (i._tag === "Message" ? [`${i.role}:${i.text}${i.interrupted ? "~" : ""}`] : []))
      assert.deepStrictEqual(messages.slice(-3).map((m) => m.split(":")[0]), ["assistant", "user", "assistant"])
      assert.isTrue(messages.at(-3)!.endsWith("~"))
      assert.strictEqual(messages.at(-1), "assistant:Okay, stopping.")
    }).pipe(Effect.provide(layers)))

  it.effect("say() delivers fixed text; a non-interruptible say survives user input", () =>
    Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent })
      yield* drive(session.idle)
      const handle = yield* session.say("Please hold, this is important.", { allowInterruptions: false })
      yield* session.send("stop")
      const outcome = yield* drive(handle.wait)
      assert.deepStrictEqual(outcome, { _tag: "Finished" })
      yield* drive(session.idle)
      assert.include(text.textOf("talker"), "Please hold, this is important.")
      const reply = yield* session.generateReply({ instructions: "say hi" })
      assert.strictEqual((yield* drive(reply.wait))._tag, "Finished")
      assert.include(text.textOf("talker"), "Hi there!")
    }).pipe(Effect.provide(layers)))

  it.effect("a speech handle interrupts only its own speech", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent })
      yield* drive(session.idle)
      const first = yield* session.say("first")
      const second = yield* session.generateReply({ userInput: "tell me a story" })
      yield* second.interrupt
      yield* drive(session.idle)
      assert.strictEqual((yield* first.wait)._tag, "Finished")
      assert.notStrictEqual((yield* second.wait)._tag, "Finished")
    }).pipe(Effect.provide(layers)))

  it.effect("barge-in: the user starting to speak cuts the reply playing", () =>
    Effect.gen(function*() {
      const text = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent })
      const handle = yield* session.generateReply({ userInput: "tell me a story" })
      yield* until(() => text.textOf("talker").length > 0)
      yield* session.setUserSpeaking(true)
      assert.strictEqual((yield* drive(handle.wait))._tag, "Interrupted")
      assert.isTrue(text.textOf("talker").length < story.join("").length)
    }).pipe(Effect.provide(layers)))
})
