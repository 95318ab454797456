import type { ScriptedModel } from "@baton-voice/baton/testing"

const city = (text: string) => /in ([A-Z][a-z]+)/.exec(text)?.[1] ?? "Paris"

export const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { instructions: "greet the user" }, reply: { text: "Hi, I'm Kelly. How can I help?" } },
  { when: { instructions: "welcome the caller back" }, reply: { text: "Welcome back, Sunny again. Which city this time?" } },
  { when: { instructions: "weather specialist" }, reply: { text: "Sunny here, your weather specialist. Which city?" } },
  { when: { user: "weather", agent: "greeter" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } },
  {
    when: { user: /\bin [A-Z]/, agent: "weather" },
    reply: (r) => ({ toolCalls: [{ name: "lookup_weather", arguments: { city: city(r.last.kind === "user" ? r.last.text : "") } }] })
  },
  {
    when: { toolOutput: "The weather in", agent: "weather" },
    reply: (r) => ({ text: r.last.kind === "tool" ? r.last.outputs[0]!.output : "" })
  },
  { when: { user: "thanks", agent: "weather" }, reply: { toolCalls: [{ name: "transfer_to_greeter" }] } },
  { when: { toolOutput: "Transferred to greeter", agent: "greeter" }, reply: { text: "Glad I could help. Anything else?" } }
]
