/**
 * Faster turns (issue 36), each decision under `TestClock` with scripted engines: the VAD hears
 * non-zero samples as speech, the STT says the next scripted text for each utterance (one word
 * more of it as an interim every 100 ms of speech), the TTS makes 50 ms of audio a character.
 * Time in the input is the audio's own, so frames are pushed at full speed; the output plays on
 * the test clock, so a reply keeps playing until the clock moves.
 *
 * - preemptive generation: the reply is asked for on the final transcript, during the silence,
 *   and used when the turn ends; when the user goes on it is thrown away: nothing heard, nothing
 *   in the history;
 * - adaptive endpointing: words that end a sentence or answer the agent's question end the turn
 *   after `minEndpointingDelayMs`, words that trail off after `maxEndpointingDelayMs`;
 * - `minInterruptionWords`: speech over a reply cuts it only with that many words;
 * - a false interruption (a cut by speech with no words) resumes the reply where it stopped,
 *   when the empty transcript comes or after `falseInterruptionTimeoutMs`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Queue, Stream } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Stt, type SttEvent } from "../../services/Stt.ts"
import { Tts } from "../../services/Tts.ts"
import { Agent } from "../../src/index.ts"
import type { SessionEvent } from "../../src/Events.ts"
import { advance, outcomes, pipeline, RATE, silence, speech } from "./fedPipeline.ts"
import * as ScriptedVad from "./scriptedVad.ts"

/** Scripted engines: `texts` are the finals of the utterances in order ("" for none heard). */
const engines = (texts: Array<string>, options: { readonly sttDelayMs?: number } = {}) =>
  Layer.mergeAll(
    ScriptedVad.layer({ minSpeechMs: 40 }),
    Layer.succeed(Stt, Stt.of({
      sampleRate: RATE,
      stream: () =>
        Effect.gen(function*() {
          const events = yield* Queue.unbounded<SttEvent>()
          const scope = yield* Effect.scope
          let frames = 0
          const words = () => (texts[0] ?? "").split(" ").filter((w) => w !== "")
          return {
            events: Stream.fromQueue(events),
            push: (frame) =>
              Effect.gen(function*() {
                if (frame.data[0] === 0) return
                frames++
                if (frames % 5 === 0 && words().length > 0) {
                  yield* Queue.offer(events, { _tag: "Interim", text: words().slice(0, frames / 5).join(" ") })
                }
              }),
            // the final comes on its own time, as from a streaming service
            endUtterance: Effect.gen(function*() {
              frames = 0
              const final = Queue.offer(events, { _tag: "Final", text: texts.shift() ?? "" })
              if (options.sttDelayMs === undefined) yield* final
              else yield* Effect.forkIn(Effect.sleep(options.sttDelayMs).pipe(Effect.andThen(final)), scope)
            }).pipe(Effect.asVoid)
          }
        })
    })),
    Layer.succeed(Tts, Tts.of({
      sampleRate: RATE,
      synthesize: (text) => Stream.make(AudioFrame.make(new Int16Array((text.length * 50 * RATE) / 1000).fill(7), RATE))
    }))
  )

const seqOf = (events: ReadonlyArray<SessionEvent>, test: (e: SessionEvent) => boolean) => events.find(test)?.seq ?? -1

const waiter = Agent.make({ name: "waiter", instructions: "Take bookings." })

describe("faster turns (issue 36)", () => {
  it.effect("preemptive generation: the reply is asked for during the silence and used when the turn ends", () =>
    Effect.gen(function*() {
      const { session, out, push, messages, decisions } = yield* pipeline(waiter, { minEndpointingDelayMs: 400 })
      const model = yield* ScriptedModel.ScriptedModel
      yield* push([...speech(400), ...silence(200)])
      // the final came 100 ms into the silence: the model was asked, nothing was said or recorded
      assert.deepStrictEqual(outcomes(yield* decisions("preemptive_generation")), ["started"])
      assert.lengthOf(model.requestsFor("waiter"), 1)
      assert.deepStrictEqual(yield* messages("user"), [])
      assert.deepStrictEqual(yield* messages("assistant"), [])
      assert.lengthOf(out.played, 0)
      yield* push(silence(200))
      // the turn ended: the reply made ahead is the one said, with no second model call
      assert.deepStrictEqual(outcomes(yield* decisions("preemptive_generation")), ["started", "used"])
      assert.deepStrictEqual(yield* messages("user"), ["book a table for two"])
      assert.lengthOf(model.requestsFor("waiter"), 1)
      yield* advance(10000)
      assert.deepStrictEqual(yield* messages("assistant"), ["For two, at eight."])
      assert.isAbove(out.played.length, 0)
      const events = yield* session.eventLog
      assert.isBelow(
        seqOf(events, (e) => e.type === "voice_decision" && e.outcome === "started"),
        seqOf(events, (e) => e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "user"),
        "started before the user's turn was recorded"
      )
    }).pipe(
      Effect.scoped,
      Effect.provide([engines(["book a table for two"]), ScriptedModel.layer([{ when: { user: /table for two/ }, reply: { text: "For two, at eight." } }])])
    ))

  it.effect("preemptive generation: discarded when the user goes on: nothing heard, nothing in the history", () =>
    Effect.gen(function*() {
      const { out, push, messages, decisions } = yield* pipeline(waiter, { minEndpointingDelayMs: 400 })
      const model = yield* ScriptedModel.ScriptedModel
      // "book a table", a pause (its reply is asked for), then the user goes on
      yield* push([...speech(400), ...silence(200)])
      assert.deepStrictEqual(outcomes(yield* decisions("preemptive_generation")), ["started"])
      yield* push([...speech(400), ...silence(600)])
      yield* advance(10000)
      assert.deepStrictEqual(outcomes(yield* decisions("preemptive_generation")), ["started", "discarded", "started", "used"])
      // one turn, with all the words; the reply to its first half was never said nor kept
      assert.deepStrictEqual(yield* messages("user"), ["book a table for two"])
      assert.deepStrictEqual(yield* messages("assistant"), ["For two, at eight."])
      assert.lengthOf(model.requestsFor("waiter"), 2)
      assert.deepStrictEqual([...new Set(out.played.map((p) => p.speechId))].length, 1, "one reply played")
    }).pipe(
      Effect.scoped,
      Effect.provide([
        engines(["book a table", "for two"]),
        ScriptedModel.layer([
          { when: { user: /table for two/ }, reply: { text: "For two, at eight." } },
          { when: { user: /table$/ }, reply: { text: "For how many?" } }
        ])
      ])
    ))

  it.effect("preemptive generation: the floor moves during the silence: the reply made ahead is not said, the new holder answers (rule 2)", () =>
    Effect.gen(function*() {
      const manager = Agent.make({ name: "manager", instructions: "Manage." })
      const { session, out, push, messages, decisions } = yield* pipeline(waiter, { minEndpointingDelayMs: 400 })
      const model = yield* ScriptedModel.ScriptedModel
      yield* push([...speech(400), ...silence(200)])
      assert.deepStrictEqual(outcomes(yield* decisions("preemptive_generation")), ["started"])
      yield* session.handoff(manager)
      yield* push(silence(200))
      yield* advance(10000)
      assert.deepStrictEqual(outcomes(yield* decisions("preemptive_generation")), ["started", "discarded"])
      assert.deepStrictEqual(yield* messages("user"), ["book a table for two"])
      assert.deepStrictEqual(yield* messages("assistant"), ["The manager speaking."])
      assert.deepStrictEqual([...new Set(out.played.map((p) => p.agent))], ["manager"], "nothing of the waiter's was played")
      // the waiter asked once, ahead; the user's turn was the manager's to answer
      assert.lengthOf(model.requestsFor("waiter"), 1)
      assert.isAbove(model.requestsFor("manager").length, 0)
    }).pipe(
      Effect.scoped,
      Effect.provide([
        engines(["book a table for two"]),
        ScriptedModel.layer([
          { when: { agent: "waiter" }, reply: { text: "For two, at eight." } },
          { when: { agent: "manager" }, reply: { text: "The manager speaking." } }
        ])
      ])
    ))

  it.effect("preemptive generation off: the model is asked only once the turn has ended", () =>
    Effect.gen(function*() {
      const { push, messages, decisions } = yield* pipeline(waiter, { minEndpointingDelayMs: 400, preemptiveGeneration: false })
      const model = yield* ScriptedModel.ScriptedModel
      yield* push([...speech(400), ...silence(200)])
      assert.lengthOf(model.requestsFor("waiter"), 0)
      yield* push(silence(200))
      assert.deepStrictEqual(yield* messages("user"), ["book a table for two"])
      assert.lengthOf(model.requestsFor("waiter"), 1)
      assert.deepStrictEqual(yield* decisions("preemptive_generation"), [])
    }).pipe(
      Effect.scoped,
      Effect.provide([engines(["book a table for two"]), ScriptedModel.layer([{ when: { user: /table/ }, reply: { text: "Sure." } }])])
    ))

  it.effect("adaptive endpointing: words that trail off wait maxEndpointingDelayMs, a finished sentence minEndpointingDelayMs", () =>
    Effect.gen(function*() {
      const { push, messages, decisions } = yield* pipeline(waiter, { minEndpointingDelayMs: 200, maxEndpointingDelayMs: 1000 })
      // "a table for two and" trails off: 900 ms of silence do not end the turn
      yield* push([...speech(400), ...silence(900)])
      assert.deepStrictEqual(yield* messages("user"), [])
      const first = yield* decisions("endpointing")
      assert.deepStrictEqual(first.at(-1)?.outcome, "trailing_off")
      assert.strictEqual(first.at(-1)?.delayMs, 1000)
      yield* push(silence(120))
      assert.deepStrictEqual(yield* messages("user"), ["a table for two and"])
      yield* advance(10000)
      // "At eight." ends a sentence: 200 ms of silence end it
      yield* push([...speech(400), ...silence(180)])
      assert.deepStrictEqual(yield* messages("user"), ["a table for two and"])
      yield* push(silence(40))
      assert.deepStrictEqual(yield* messages("user"), ["a table for two and", "At eight."])
      assert.deepStrictEqual(outcomes(yield* decisions("endpointing")).at(-1), "sentence_end")
    }).pipe(
      Effect.scoped,
      Effect.provide([engines(["a table for two and", "At eight."]), ScriptedModel.layer([{ when: { agent: "waiter" }, reply: { text: "Noted." } }])])
    ))

  it.effect("adaptive endpointing: a short answer to the agent's question ends the turn after minEndpointingDelayMs", () =>
    Effect.gen(function*() {
      const asker = Agent.make({ name: "asker", instructions: "Ask.", onEnter: Agent.say("Which city?").pipe(Effect.asVoid) })
      const { push, messages, decisions } = yield* pipeline(asker, { minEndpointingDelayMs: 200, maxEndpointingDelayMs: 1000 })
      yield* advance(10000)
      assert.deepStrictEqual(yield* messages("assistant"), ["Which city?"])
      yield* push([...speech(300), ...silence(220)])
      assert.deepStrictEqual(yield* messages("user"), ["paris"])
      const last = (yield* decisions("endpointing")).at(-1)
      assert.strictEqual(last?.outcome, "answer")
      assert.strictEqual(last?.delayMs, 200)
    }).pipe(Effect.scoped, Effect.provide([engines(["paris"]), ScriptedModel.layer([{ when: { agent: "asker" }, reply: { text: "Noted." } }])])))

  const LONG = "One two three four five six. Seven eight nine ten eleven twelve."
  const host = Agent.make({ name: "host", instructions: "Talk.", onEnter: Agent.say(LONG).pipe(Effect.asVoid) })

  it.effect("minInterruptionWords: speech over a reply cuts it only once it has that many words", () =>
    Effect.gen(function*() {
      const { out, push, messages, decisions } = yield* pipeline(host, { minInterruptionMs: 300, minInterruptionWords: 3 })
      yield* advance(1000)
      assert.isAbove(out.played.length, 0, "the reply plays")
      // 600 ms of "mm-hmm" (one word): long enough, too few words; the reply goes on
      yield* push([...speech(600), ...silence(400)])
      assert.lengthOf(out.clears, 0)
      assert.deepStrictEqual(outcomes(yield* decisions("interruption")), ["ignored"])
      // "wait stop please": the cut comes with its third word, 300 ms into the speech
      yield* push(speech(240))
      assert.lengthOf(out.clears, 0)
      yield* push(speech(80))
      assert.lengthOf(out.clears, 1)
      const cut = (yield* decisions("interruption")).at(-1)
      assert.strictEqual(cut?.outcome, "cut")
      assert.strictEqual(cut?.words, 3)
      yield* push(silence(800))
      yield* advance(10000)
      // the backchannel was not lost: it went with the next turn
      assert.deepStrictEqual(yield* messages("user"), ["mm-hmm wait stop please"])
    }).pipe(Effect.scoped, Effect.provide([engines(["mm-hmm", "wait stop please"]), ScriptedModel.layer([{ when: { agent: "host" }, reply: { text: "Sure." } }])])))

  it.effect("resume after a false interruption: a cut by speech with no words goes on where it stopped, not from the start", () =>
    Effect.gen(function*() {
      const { out, push, messages, decisions } = yield* pipeline(host, { minInterruptionMs: 300 })
      yield* advance(1500)
      yield* push([...speech(400), ...silence(600)])
      assert.lengthOf(out.clears, 1, "the cough cut the reply")
      assert.deepStrictEqual(outcomes(yield* decisions("false_interruption")), ["resumed"])
      yield* advance(10000)
      const [heard, rest] = yield* messages("assistant")
      assert.isTrue(heard !== undefined && heard.length > 0 && heard.length < LONG.length, `heard: "${heard}"`)
      assert.strictEqual(`${heard} ${rest}`, LONG, "the user heard the whole reply once")
      assert.deepStrictEqual(yield* messages("user"), [])
    }).pipe(Effect.scoped, Effect.provide([engines([""]), ScriptedModel.layer([])])))

  it.effect("resume after a false interruption: falseInterruptionTimeoutMs resumes while the transcript is still awaited", () =>
    Effect.gen(function*() {
      const { out, push, messages, decisions } = yield* pipeline(host, { minInterruptionMs: 300, falseInterruptionTimeoutMs: 1000 })
      yield* advance(1500)
      // the STT takes 5 s of the clock to answer; the audio goes on meanwhile
      yield* push([...speech(400), ...silence(900)])
      assert.lengthOf(out.clears, 1)
      assert.deepStrictEqual(yield* decisions("false_interruption"), [])
      yield* push(silence(200))
      assert.deepStrictEqual(outcomes(yield* decisions("false_interruption")), ["resumed"])
      yield* advance(20000)
      const said = yield* messages("assistant")
      assert.strictEqual(said.join(" "), LONG)
      assert.deepStrictEqual(yield* messages("user"), [])
    }).pipe(Effect.scoped, Effect.provide([engines([""], { sttDelayMs: 5000 }), ScriptedModel.layer([])])))

  it.effect("resumeFalseInterruption false: the cut reply stays cut", () =>
    Effect.gen(function*() {
      const { out, push, messages, decisions } = yield* pipeline(host, { minInterruptionMs: 300, resumeFalseInterruption: false })
      yield* advance(1500)
      yield* push([...speech(400), ...silence(600)])
      yield* advance(10000)
      assert.lengthOf(out.clears, 1)
      assert.lengthOf(yield* messages("assistant"), 1)
      assert.deepStrictEqual(yield* decisions("false_interruption"), [])
    }).pipe(Effect.scoped, Effect.provide([engines([""]), ScriptedModel.layer([])])))
})
