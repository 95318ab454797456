/**
 * The operator's desk over real sockets (issue 35), no browser: a transfer offered to an operator
 * online on `/operator/ws?name=` (who, the session, the briefing, how long it rings) and accepted
 * (the transfer is Answered, then the operator holds the floor of the caller's session), declined
 * (Declined: the agent keeps the floor and tells the caller) or left to ring (NoAnswer, and the
 * offer is closed on the page); and listen-in on a voice session: the operator hears the caller
 * and the agent, and once they took over their voice reaches the caller and is transcribed into
 * the history as their words.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Layer } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { Agent, AgentTask, Tool } from "../../src/index.ts"
import * as Transfer from "../../src/Transfer.ts"
import { engines, speak } from "../voice/harness.ts"
import { type Client, connect, start, wait } from "./harness.ts"
import { agentText, offeredToAda, serveWithDesk } from "./operatorDesk.ts"

const transferTool = (task: () => AgentTask.AgentTask<Transfer.TransferOutcome, Transfer.Transferer>) =>
  Tool.make("transfer", {
    description: "Transfer the caller to a person",
    handler: () => AgentTask.run(task()).pipe(Effect.map(Transfer.describe))
  })

const desk = (ringTimeout: Duration.Input) =>
  Agent.make({
    name: "front",
    instructions: "You are the front desk.",
    tools: [transferTool(() => Transfer.warm({ to: "ada", briefing: "Jane was charged twice for room 12.", ringTimeout }))]
  })

const model = ScriptedModel.layer([
  { when: { user: "transfer me" }, reply: { toolCalls: [{ name: "transfer" }] } },
  { when: { agent: "front" }, reply: (r) => ({ text: r.last.kind === "tool" ? `Front desk: ${r.last.outputs.map((o) => o.output).join(" ")}` : "Front desk here." }) }
])

/** The desk with a transfer ringing `ringTimeout`: ada online, a caller on /ws who asked for it, and ada's offer. */
const offered = (ringTimeout: Duration.Input) => Effect.flatMap(serveWithDesk(desk(ringTimeout), model), offeredToAda)

/** A caller on /ws, and ada with that caller's session open on her desk (`history`: its first frame). */
const openedByAda = (server: { readonly ws: string }) =>
  Effect.gen(function*() {
    const caller = yield* connect(`${server.ws}/ws`)
    const ready = yield* wait(() => caller.waitFor((f) => f.type === "ready"))
    const ada = yield* connect(`${server.ws}/operator/ws?name=ada`)
    ada.sendJson({ type: "open", session: ready.sessionId })
    const history = yield* wait(() => ada.waitFor((f) => f.type === "history", "the session opened"))
    return { caller, ready, ada, history }
  })

describe("the operator's desk (sockets)", () => {
  it.live("a warm transfer offered to ada: she sees who, the session and the briefing, accepts, and holds the floor of that session", () =>
    Effect.gen(function*() {
      const server = yield* serveWithDesk(desk("30 seconds"), model)
      const ada = yield* connect(`${server.ws}/operator/ws?name=ada`)
      yield* wait(() => new Promise((r) => setTimeout(r, 50)))
      assert.isTrue(server.state.operators.online.has("ada"), "ada is online once connected")
      // A second page with her name is told it gets no transfers (the offers stay hers).
      const twin = yield* connect(`${server.ws}/operator/ws?name=ada`)
      assert.include((yield* wait(() => twin.waitFor((f) => f.type === "error" && f.of === "offers"))).message, "online already")
      const caller = yield* connect(`${server.ws}/ws`)
      const ready = yield* wait(() => caller.waitFor((f) => f.type === "ready"))
      caller.sendJson({ type: "user_text", text: "transfer me" })
      const { offer, remainingMs } = yield* wait(() => ada.waitFor((f) => f.type === "offer", "the offer"))
      assert.strictEqual(offer.session, ready.sessionId)
      assert.strictEqual(offer.kind, "warm")
      assert.strictEqual(offer.to, "ada")
      assert.strictEqual(offer.briefing, "Jane was charged twice for room 12.")
      assert.isAbove(remainingMs, 20_000)
      assert.isAtMost(remainingMs, 30_000)
      ada.sendJson({ type: "accept", offer: offer.id })
      yield* wait(() => ada.waitFor((f) => f.type === "result" && f.of === "accept", "the accept"))
      const history = yield* wait(() => ada.waitFor((f) => f.type === "history", "the session opened"))
      assert.strictEqual(history.session, ready.sessionId)
      const taken = yield* wait(() => ada.waitFor((f) => f.type === "result" && f.of === "take_over", "the take-over"))
      assert.deepStrictEqual(taken.outcome, { _tag: "Applied", to: "ada" })
      yield* wait(() => caller.waitFor((f) => f.type === "agent_handoff" && f.kind === "take_over" && f.to === "ada", "ada on the floor"))
      yield* wait(() => ada.waitFor((f) => f.type === "offer_closed" && f.id === offer.id, "the offer closed"))
      // The transfer's outcome reached the tool before the take-over: the agent knows it was answered.
      const outputs = yield* wait(() => ada.waitFor((f) => f.type === "event" && f.event.type === "conversation_item_added" && f.event.item._tag === "FunctionCallOutput", "the tool's output"))
      assert.include(outputs.event.item.output, "The transfer was answered (ada accepted)")
      // Ada speaks to the caller; the caller's words reach her.
      ada.sendJson({ type: "say", text: "Hi Jane, Ada from billing." })
      yield* wait(() => caller.waitFor((f) => f.type === "agent_text" && f.delta.includes("Ada from billing"), "ada's words"))
      caller.sendJson({ type: "user_text", text: "thanks Ada" })
      yield* wait(() => ada.waitFor((f) => f.type === "event" && f.event.type === "conversation_item_added" && f.event.item.text === "thanks Ada", "the caller's words"))
      // An offer that is gone cannot be answered again.
      ada.sendJson({ type: "accept", offer: offer.id })
      const refused = yield* wait(() => ada.waitFor((f) => f.type === "error" && f.of === "accept", "the refusal"))
      assert.include(refused.message, "is ringing for ada")
      assert.isFalse(twin.frames.some((f) => f.type === "offer"))
    }).pipe(Effect.scoped), 30_000)

  it.live("declined with a reason: the transfer is Declined, the agent keeps the floor and tells the caller", () =>
    Effect.gen(function*() {
      const { ada, caller, offer } = yield* offered("30 seconds")
      ada.sendJson({ type: "decline", offer: offer.id, reason: "on another call" })
      yield* wait(() => ada.waitFor((f) => f.type === "result" && f.of === "decline", "the decline"))
      yield* wait(() => ada.waitFor((f) => f.type === "offer_closed" && f.outcome?._tag === "Declined", "the offer closed as declined"))
      yield* wait(() => caller.waitFor(() => agentText(caller).includes("declined the transfer (ada declined: on another call)"), "the agent telling the caller"))
      assert.isFalse(caller.frames.some((f) => f.type === "agent_handoff" && f.kind === "take_over"))
    }).pipe(Effect.scoped), 30_000)

  it.live("nobody answers within the ring timeout: NoAnswer, the offer is closed on the operator's page, the agent tells the caller", () =>
    Effect.gen(function*() {
      const { ada, caller, offer } = yield* offered("1 second")
      const closed = yield* wait(() => ada.waitFor((f) => f.type === "offer_closed", "the offer closed", 10_000))
      assert.strictEqual(closed.id, offer.id)
      assert.deepStrictEqual(closed.outcome, { _tag: "NoAnswer", reason: "no operator answered" })
      yield* wait(() => caller.waitFor(() => agentText(caller).includes("nobody answered (no operator answered)"), "the agent telling the caller"))
      ada.sendJson({ type: "accept", offer: offer.id })
      yield* wait(() => ada.waitFor((f) => f.type === "error" && f.of === "accept", "too late"))
    }).pipe(Effect.scoped), 30_000)

  it.live("an operator who leaves holding the floor hands it back to the agent taken over and goes offline", () =>
    Effect.gen(function*() {
      const server = yield* serveWithDesk(desk("30 seconds"), model)
      const { caller, ada } = yield* openedByAda(server)
      ada.sendJson({ type: "take_over" })
      yield* wait(() => caller.waitFor((f) => f.type === "agent_handoff" && f.to === "ada", "ada on the floor"))
      ada.socket.close(1000)
      const back = yield* wait(() => caller.waitFor((f) => f.type === "agent_handoff" && f.kind === "hand_back", "the floor back"))
      assert.deepStrictEqual([back.from, back.to], ["ada", "front"])
      assert.isFalse(server.state.operators.online.has("ada"), "ada is offline once gone")
    }).pipe(Effect.scoped), 30_000)

  it.live("an operator's name must be a name", () =>
    Effect.gen(function*() {
      const server = yield* serveWithDesk(desk("1 second"), model)
      const response = yield* Effect.promise(() => fetch(`${server.url}/operator/ws?name=${encodeURIComponent("<script>")}`))
      assert.strictEqual(response.status, 400)
      assert.include(yield* Effect.promise(() => response.text()), "an operator's name is 1 to 40 letters")
    }).pipe(Effect.scoped), 30_000)

  it.live("listen-in on a voice session: the operator hears the caller, then the agent; after taking over, their voice reaches the caller and is transcribed into the history", () =>
    Effect.gen(function*() {
      const question = yield* speak("What is the weather in Paris?").pipe(Effect.provide(engines))
      const answer = yield* speak("I can help you with that.").pipe(Effect.provide(engines))
      const front = Agent.make({ name: "front", instructions: "You are the front desk." })
      const replies = ScriptedModel.layer([{ when: () => true, reply: { text: "It is sunny in Paris." } }])
      const server = yield* start(front, Layer.mergeAll(replies, engines), { maxLagMs: 0 })
      const { caller, ready, ada, history: opened } = yield* openedByAda(server)
      assert.strictEqual(ready.audio, "pipeline")
      assert.strictEqual(opened.audio, "pipeline")
      assert.strictEqual((yield* wait(() => ada.waitFor((f) => f.type === "audio_format", "the listen-in format"))).sampleRate, 24_000)
      const loudness = (from: number) => Math.max(0, ...ada.binary.slice(from).map((b) => peak(b)))
      // Nothing is said yet: nothing (or silence) comes.
      yield* wait(() => new Promise((r) => setTimeout(r, 300)))
      assert.isBelow(loudness(0), 200)
      // The caller speaks: the operator hears it.
      caller.sendJson({ type: "audio_format", sampleRate: 16000 })
      const heard = ada.binary.length
      for (const frame of AudioFrame.split(AudioFrame.concat([question, AudioFrame.silence(1200, 16000)]), 20)) caller.socket.send(AudioFrame.toPcm16(frame))
      yield* wait(() => until(() => loudness(heard) > 2000, "the caller's voice at the desk"))
      // Once that turn is over and its audio played out, the caller types: the agent's spoken answer alone reaches the desk.
      yield* wait(() => caller.waitFor((f) => f.type === "speech_finished", "the reply spoken", 15_000))
      yield* wait(() => quiet(ada, 400))
      const replyAt = ada.binary.length
      caller.sendJson({ type: "user_text", text: "and tomorrow?" })
      yield* wait(() => until(() => ada.binary.slice(replyAt).reduce((n, b) => n + b.byteLength, 0) > 24_000 && loudness(replyAt) > 2000, "the agent's voice at the desk"))
      // Before taking over, the operator's microphone goes nowhere (told once).
      ada.socket.send(AudioFrame.toPcm16(answer).subarray(0, 640))
      ada.socket.send(AudioFrame.toPcm16(answer).subarray(0, 640))
      yield* wait(() => ada.waitFor((f) => f.type === "error" && f.of === "audio", "the refusal"))
      assert.strictEqual(ada.frames.filter((f) => f.type === "error" && f.of === "audio").length, 1)
      ada.sendJson({ type: "take_over" })
      yield* wait(() => caller.waitFor((f) => f.type === "agent_handoff" && f.to === "ada", "ada on the floor"))
      const before = caller.binary.reduce((n, b) => n + b.byteLength, 0)
      const formats = caller.frames.filter((f) => f.type === "audio_format").length
      ada.sendJson({ type: "audio_format", sampleRate: 16000 })
      for (const frame of AudioFrame.split(AudioFrame.concat([AudioFrame.silence(200, 16000), answer, AudioFrame.silence(300, 16000)]), 20)) {
        ada.socket.send(AudioFrame.toPcm16(frame))
      }
      ada.sendJson({ type: "audio_end" })
      // The caller gets her voice, as the agents' audio comes: PCM16 after its format.
      yield* wait(() => until(() => caller.binary.reduce((n, b) => n + b.byteLength, 0) - before >= AudioFrame.toPcm16(answer).byteLength, "ada's voice at the caller"))
      assert.isAbove(Math.max(...caller.binary.slice(-100).map((b) => peak(b))), 2000)
      assert.isAtLeast(caller.frames.filter((f) => f.type === "audio_format").length, formats)
      // Her words are in the history as hers (pocketsphinx's transcript), not said again by the TTS.
      const said = yield* wait(() => ada.waitFor((f) => f.type === "event" && f.event.type === "conversation_item_added" && f.event.item.role === "assistant" && f.event.item.agent === "ada", "ada's words recorded", 15_000))
      assert.match(said.event.item.text, /help|that|can/i)
      assert.isFalse(caller.frames.some((f) => f.type === "agent_text" && f.agent === "ada"), "her voiced words are not sent as text to speak")
      assert.isFalse(ada.frames.some((f) => f.type === "error" && f.of !== "audio"), JSON.stringify(ada.frames.filter((f) => f.type === "error")))
    }).pipe(Effect.scoped), 60_000)

  it.live("a text-only session: the desk says so, and sends no audio; a whisper is in the session's events for the desk, never sent to the caller", () =>
    Effect.gen(function*() {
      const server = yield* serveWithDesk(desk("30 seconds"), model)
      const { caller, ada, history } = yield* openedByAda(server)
      assert.strictEqual(history.audio, "none")
      caller.sendJson({ type: "user_text", text: "hello" })
      yield* wait(() => ada.waitFor((f) => f.type === "event" && f.event.type === "speech_finished", "the reply"))
      assert.isFalse(ada.frames.some((f) => f.type === "audio_format"))
      assert.strictEqual(ada.binary.length, 0)
      ada.sendJson({ type: "whisper", text: "Offer the late checkout." })
      yield* wait(() => ada.waitFor((f) => f.type === "event" && f.event.type === "whisper" && f.event.agent === "front", "the whisper's event"))
      caller.sendJson({ type: "user_text", text: "anything else?" })
      yield* wait(() => caller.waitFor((f) => f.type === "speech_finished" && caller.frames.filter((g) => g.type === "speech_finished").length === 2, "the next reply"))
      assert.isFalse(caller.frames.some((f) => f.type === "whisper" || JSON.stringify(f).includes("late checkout")), "the caller is never sent the whisper")
    }).pipe(Effect.scoped), 30_000)
})

/** The loudest sample of a PCM16 frame. */
const peak = (bytes: Buffer) => {
  const pcm = new Int16Array(bytes.buffer, bytes.byteOffset, Math.floor(bytes.byteLength / 2))
  let max = 0
  for (const v of pcm) max = Math.max(max, Math.abs(v))
  return max
}

/** Resolves once no audio came for `ms`. */
const quiet = (client: Client, ms: number) =>
  new Promise<void>((resolve) => {
    let seen = client.binary.length
    const poll = () => {
      if (client.binary.length === seen) return resolve()
      seen = client.binary.length
      setTimeout(poll, ms)
    }
    setTimeout(poll, ms)
  })

const until = (check: () => boolean, what: string, ms = 15_000) =>
  new Promise<void>((resolve, reject) => {
    const end = Date.now() + ms
    const poll = () => (check() ? resolve() : Date.now() > end ? reject(new Error(`timed out waiting for ${what}`)) : setTimeout(poll, 20))
    poll()
  })
