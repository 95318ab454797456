/**
 * Issue 12, part 5: a turn the user speaks between two steps of a TaskGroup, on a realtime model
 * whose server answers spoken turns by itself. Typed input there is held for the next step (the
 * coordinator only runs its steps, it never talks); a spoken turn must be too: the server's own
 * answer, in the coordinator's voice, is cancelled, and the next step answers the words (passed
 * on under their transcript's id).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { drive } from "../../layers/testing/Drive.ts"
import * as ScriptedRealtime from "../../layers/testing/ScriptedRealtime.ts"
import * as TextCapture from "../../layers/testing/TextCapture.ts"
import { Agent, AgentSession, AgentTask, TaskGroup, Tool } from "../../src/index.ts"

const step = (name: string, tool: string): AgentTask.AgentTask<string> => {
  const task: AgentTask.AgentTask<string> = AgentTask.make<string>({
    name,
    instructions: `You are ${name}.`,
    tools: [
      Tool.make(tool, {
        description: `finish ${name}`,
        parameters: Schema.Struct({ value: Schema.String }),
        handler: ({ value }) => AgentTask.complete(task, value)
      })
    ]
  })
  return task
}

const said = (request: { readonly last: { readonly kind: string; readonly text?: string } }, text: string) =>
  request.last.kind === "user" && request.last.text === text

const COORDINATOR = "You coordinate the steps."

const scenario = (capabilities: ScriptedRealtime.Options["capabilities"], speechEvents: boolean, typed = false) => {
  const completed: Array<string> = []
  const group = TaskGroup.make({
    name: "steps",
    instructions: COORDINATOR,
    tasks: [
      { id: "first", description: "the first answer", task: step("first_step", "finish_first") },
      { id: "second", description: "the second answer", task: step("second_step", "finish_second") }
    ],
    // The gap between the steps, where the user speaks.
    onTaskCompleted: (id) => Effect.sync(() => void completed.push(id)).pipe(Effect.andThen(Effect.sleep("1 second")))
  })
  const host = Agent.make({ name: "host", instructions: "You host.", onEnter: AgentTask.run(group).pipe(Effect.asVoid) })
  const model = Layer.mergeAll(
    ScriptedRealtime.layer({
      rules: [
        { when: (r) => r.instructions === COORDINATOR, reply: { text: "The coordinator speaks." } },
        { when: (r) => r.instructions === "You are first_step." && said(r, "alpha"), reply: { toolCalls: [{ name: "finish_first", arguments: { value: "alpha" } }] } },
        { when: (r) => r.instructions === "You are second_step." && said(r, "my name is bob"), reply: { text: "Nice to meet you, Bob." } },
        { when: () => true, reply: { text: "Go on." } }
      ],
      ...(capabilities ? { capabilities } : {}),
      speechEvents
    }),
    TextCapture.layer
  )
  return Effect.gen(function*() {
    const text = yield* TextCapture.TextCapture
    const session = yield* AgentSession.start({ agent: host })
    yield* drive(session.idle)
    assert.strictEqual((yield* session.currentAgent)?.name, "first_step")
    yield* session.send("alpha")
    yield* drive(Effect.sleep("100 millis"))
    // Between the steps: the coordinator holds the floor for its second.
    assert.deepStrictEqual(completed, ["first"])
    assert.strictEqual((yield* session.currentAgent)?.name, "steps")
    yield* (typed ? session.send("my name is bob") : session.pushAudio(ScriptedRealtime.utterance("my name is bob")))
    yield* drive(Effect.sleep("3 seconds").pipe(Effect.andThen(session.idle)))
    assert.strictEqual((yield* session.currentAgent)?.name, "second_step")
    assert.strictEqual(text.textOf("steps"), "", "the coordinator never talks")
    assert.include(text.textOf("second_step"), "Nice to meet you, Bob.")
  }).pipe(Effect.provide(model))
}

describe("rule 2: a spoken turn between the steps of a TaskGroup", () => {
  it.effect("rule 2: on an OpenAI-like model the next step answers it, not the coordinator", () => scenario(undefined, true))
  it.effect("rule 2: on a Gemini-like model (no speech events) the next step answers it, not the coordinator", () =>
    scenario(ScriptedRealtime.geminiLike, false))
  it.effect("rule 8: typed there, the next step answers it (its cut first reply's cancel does not cut the answer)", () =>
    // The next step's first reply is cut by the held turn the instant it starts; that reply's
    // response had already ended, and its cancel, unnamed, cut the answer to the turn instead.
    scenario(undefined, true, true))
})
