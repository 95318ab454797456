/**
 * Found by the simulation (seed 1957, shrunk, with a realtime model; the same happens with a
 * text model).
 *
 * The user speaks while a TaskGroup's task is in its tool phase (the input is held). The task
 * gives up; the group's onEnter ends the group (`AgentTask.fail` outside a tool call sends
 * `CompleteTask` without marking the actor as passing the floor), and before the session has
 * handled that, the group's actor takes the held input as its own user turn: it records the
 * user's message and starts a reply, which the return of the floor to the caller then cuts. The
 * user's message is answered by nobody, and the group's reply ends after it passed the floor
 * (rule 2).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drive } from "../../../layers/testing/Drive.ts"
import * as ScriptedModel from "../../../layers/testing/ScriptedModel.ts"
import { Agent, AgentSession, AgentTask, TaskGroup, Tool } from "../../../src/index.ts"
import { eventsOfAgentAfter } from "../../helpers.ts"

const step: AgentTask.AgentTask<string> = AgentTask.make<string>({
  name: "step",
  instructions: "One step.",
  tools: [Tool.make("give_up", { description: "give up", handler: () => Effect.sleep("610 millis").pipe(Effect.andThen(AgentTask.fail(step, "gave up"))) })]
})
const steps = TaskGroup.make({ name: "steps", tasks: [{ id: "step", description: "the step", task: step }] })
const host: Agent.Agent = Agent.make({
  name: "host",
  instructions: "Host.",
  onEnter: AgentTask.run(steps).pipe(Effect.ignore, Effect.andThen(Agent.reply({ instructions: "after the steps" })), Effect.asVoid)
})

describe("rule 2: silence after handoff (simulation regression)", () => {
  it.effect("rule 2: a TaskGroup that is ending does not take the user's held input as its own turn", () =>
    Effect.gen(function*() {
      const session = yield* AgentSession.start({ agent: host })
      yield* drive(session.run("first"))
      // "give up" makes the step call its tool (610 ms); the user speaks again 220 ms into it.
      yield* drive(
        session.send("give up").pipe(
          Effect.andThen(Effect.sleep("220 millis")),
          Effect.andThen(session.send("second")),
          Effect.andThen(Effect.sleep("1 second"))
        )
      )
      yield* drive(session.idle)
      const events = yield* session.eventLog
      const back = events.find((e) => e.type === "agent_handoff" && e.from === "steps" && e.to === "host")!
      assert.deepStrictEqual(eventsOfAgentAfter(events, "steps", back.seq), [])
      const second = (yield* session.history).items.find((i) => i._tag === "Message" && i.text === "second")
      assert.notStrictEqual(second?._tag === "Message" ? second.agent : undefined, "steps")
    }).pipe(Effect.provide(ScriptedModel.layer([
      { when: { user: "give up", agent: "step" }, reply: { toolCalls: [{ name: "give_up" }] } },
      { when: { agent: "steps" }, reply: { text: "The group speaks." } },
      { when: { agent: "host" }, reply: { text: "Back at the host." } },
      { when: { agent: "step" }, reply: { text: "Step here." } }
    ]))))
})
