/**
 * The ready-made tasks (issue 37): each collects one value with its Schema, reads it back and
 * completes only once the caller confirmed; the caller's tool gets the typed result. Driven by
 * the scripted model as a real one would call the tools.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, AgentTask, CollectAddress, CollectDate, CollectDigits, CollectEmail, CollectPhone, Tool } from "../../src/index.ts"

/** A front desk whose `collect` tool runs `task` and answers with what it got (or why not). */
const frontFor = <A>(task: AgentTask.AgentTask<A>) =>
  Agent.make({
    name: "front",
    instructions: "Collect what is asked.",
    tools: [Tool.make("collect", {
      description: "collect",
      handler: () =>
        AgentTask.run(task).pipe(
          Effect.map((value) => `got ${JSON.stringify(value)}`),
          Effect.catch((e) => Effect.succeed(`failed: ${e.message}`))
        )
    })]
  })

const lastText = (r: ScriptedModel.RecordedRequest) =>
  r.last.kind === "user" ? r.last.text : r.last.kind === "tool" ? r.last.outputs.map((o) => o.output).join(" ") : ""

/** The scripted model: the front desk collects; the task asks, records what the user says as
 * `record_<field>` with `heard(user text)`, reads back what the tool said, and confirms on "yes". */
const script = (task: string, field: string, heard: (said: string) => string, extra: ReadonlyArray<ScriptedModel.Rule> = []) =>
  ScriptedModel.layer([
    ...extra,
    { when: { user: "start", agent: "front" }, reply: { toolCalls: [{ name: "collect" }] } },
    { when: { agent: "front" }, reply: (r) => ({ text: `Front heard: ${lastText(r)}` }) },
    { when: { user: "yes", agent: task }, reply: () => ({ toolCalls: [{ name: `confirm_${field}`, arguments: { [field]: confirmed.get(task) ?? "" } }] }) },
    { when: { user: /^no,? I won't/, agent: task }, reply: { toolCalls: [{ name: "cannot_provide", arguments: { reason: "privacy" } }] } },
    {
      when: (r) => r.agent === task && r.last.kind === "user" && lastText(r) !== "start",
      reply: (r) => {
        const value = heard(lastText(r))
        confirmed.set(task, value)
        return { toolCalls: [{ name: `record_${field}`, arguments: { [field]: value } }] }
      }
    },
    { when: (r) => r.agent === task && r.last.kind === "tool", reply: (r) => ({ text: lastText(r).replace(/^Read it back to the caller as "(.*)" and ask.*$/, "Is it $1?") }) },
    { when: { agent: task }, reply: { text: "What is it?" } }
  ])
const confirmed = new Map<string, string>()

const said = (capture: TextCapture.TextCaptureService) => capture.writes.map((w) => `${w.agent}: ${w.text}`)

describe("collect email", () => {
  it.effect("collect email: a spoken address is normalized, read back, confirmed, and the caller's tool gets it", () =>
    Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: frontFor(CollectEmail.make()) })
      yield* session.run("start")
      yield* session.run("Jane dot Doe at Example dot com")
      yield* session.run("yes")
      assert.deepStrictEqual(said(capture), [
        "collect_email: What is it?",
        "collect_email: Is it jane.doe@example.com?",
        `front: Front heard: got "jane.doe@example.com"`
      ])
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, script("collect_email", "email", (s) => s)))))

  it.effect("collect email: an address that is not one is refused and asked again; the correction is what completes", () =>
    Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: frontFor(CollectEmail.make()) })
      yield* session.run("start")
      yield* session.run("jane at nowhere")
      assert.include(said(capture).at(-1)!, `"jane at nowhere" is not a valid email address`)
      yield* session.run("jane at example dot org")
      yield* session.run("yes")
      assert.strictEqual(said(capture).at(-1), `front: Front heard: got "jane@example.org"`)
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, script("collect_email", "email", (s) => s)))))

  it.effect("collect email: confirming a value never read back is refused; the task goes on", () =>
    Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: frontFor(CollectEmail.make()) })
      yield* session.run("start")
      yield* session.run("skip ahead")
      assert.include(said(capture).at(-1)!, "read it back before confirming")
      assert.strictEqual((yield* session.currentAgent)?.name, "collect_email")
    }).pipe(Effect.provide(Layer.mergeAll(
      TextCapture.layer,
      script("collect_email", "email", (s) => s, [
        { when: { user: "skip ahead", agent: "collect_email" }, reply: { toolCalls: [{ name: "confirm_email", arguments: { email: "bob@example.com" } }] } }
      ])
    ))))

  it.effect("collect email: a caller who will not give it fails the task, and the caller's tool hears why", () =>
    Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: frontFor(CollectEmail.make()) })
      yield* session.run("start")
      yield* session.run("no, I won't")
      assert.include(said(capture).at(-1)!, "failed: the caller did not give their email address: privacy")
      assert.strictEqual((yield* session.currentAgent)?.name, "front")
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, script("collect_email", "email", (s) => s)))))
})

describe("collect digits", () => {
  it.effect("collect digits: keypad digits (DTMF) of the wrong length are refused, the right ones read back digit by digit", () =>
    Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: frontFor(CollectDigits.make({ what: "PIN", length: 4 })) })
      yield* session.run("start")
      yield* session.run("DTMF: 471")
      assert.include(said(capture).at(-1)!, "is not a valid PIN")
      yield* session.run("DTMF: 4711#")
      assert.strictEqual(said(capture).at(-1), "collect_digits: Is it 4 7 1 1?")
      yield* session.run("yes")
      assert.strictEqual(said(capture).at(-1), `front: Front heard: got "4711"`)
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, script("collect_digits", "digits", (s) => s)))))
})

describe("collect phone", () => {
  it.effect("collect phone: spoken words and separators become +14155550100", () =>
    Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: frontFor(CollectPhone.make()) })
      yield* session.run("start")
      yield* session.run("plus one (415) 555-0100")
      yield* session.run("yes")
      assert.strictEqual(said(capture).at(-1), `front: Front heard: got "+14155550100"`)
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, script("collect_phone", "phone", (s) => s)))))
})

describe("collect date", () => {
  it.effect("collect date: a day that does not exist is refused; a real one is read back in words and typed", () =>
    Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: frontFor(CollectDate.make({ what: "date of birth" })) })
      yield* session.run("start")
      yield* session.run("2023-02-30")
      assert.include(said(capture).at(-1)!, "is not a valid date of birth")
      yield* session.run("1990-05-03")
      assert.strictEqual(said(capture).at(-1), "collect_date: Is it May 3, 1990?")
      yield* session.run("yes")
      assert.strictEqual(said(capture).at(-1), `front: Front heard: got {"year":1990,"month":5,"day":3}`)
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, script("collect_date", "date", (s) => s)))))
})

describe("collect address", () => {
  it.effect("collect address: a missing part is asked for; the whole address is read back in one line and typed", () =>
    Effect.gen(function*() {
      const capture = yield* TextCapture.TextCapture
      const session = yield* AgentSession.start({ agent: frontFor(CollectAddress.make()) })
      yield* session.run("start")
      yield* session.run("Hauptstrasse 5; Berlin; 10115")
      assert.include(said(capture).at(-1)!, "Ask for what is missing")
      yield* session.run("Hauptstrasse 5; Berlin; 10115; Germany")
      assert.strictEqual(said(capture).at(-1), "collect_address: Is it Hauptstrasse 5, 10115 Berlin, Germany?")
      yield* session.run("yes")
      assert.strictEqual(said(capture).at(-1), `front: Front heard: got {"street":"Hauptstrasse 5","city":"Berlin","postalCode":"10115","country":"Germany"}`)
    }).pipe(Effect.provide(Layer.mergeAll(TextCapture.layer, script("collect_address", "address", (s) => s)))))
})
