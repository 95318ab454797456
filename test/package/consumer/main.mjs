// A user's program on the installed package, in plain JavaScript: two agents, a handoff, the
// scripted model from the /testing subpath. Prints what happened as one JSON line.
import { Effect } from "effect"
import { Agent, AgentSession, Tool } from "@baton-voice/baton"
import { ScriptedModel } from "@baton-voice/baton/testing"

const weather = Agent.make({ name: "weather", instructions: "You tell the weather." })
const greeter = Agent.make({
  name: "greeter",
  instructions: "You greet callers and transfer them.",
  tools: [Tool.handoff("transfer_to_weather", () => weather)]
})
const model = ScriptedModel.layer([
  { when: { user: "weather please" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } },
  { when: { agent: "weather" }, reply: { text: "Sunny in Paris." } }
])

const program = Effect.gen(function*() {
  const session = yield* AgentSession.start({ agent: greeter })
  const result = yield* session.run("weather please")
  return {
    handoffs: result.events.filter((e) => e.type === "agent_handoff").map((e) => `${e.from}->${e.to}`),
    said: result.events.filter((e) => e.type === "message" && e.role === "assistant").map((e) => `${e.agent}: ${e.content}`)
  }
}).pipe(Effect.scoped, Effect.provide(model))

console.log(JSON.stringify(await Effect.runPromise(program)))
