/** The scripted model the quickstart runs on when no model is configured (and its test uses). */
import type { ScriptedModel } from "@baton-voice/baton/testing"

export const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { instructions: "greet the user" }, reply: { text: "Hello! How can I help?" } },
  { when: { user: "weather", agent: "greeter" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } },
  // The weather agent sees the question (context "full") after the transfer output.
  { when: { toolOutput: "Transferred to weather", agent: "weather" }, reply: { toolCalls: [{ name: "lookup_weather", arguments: { city: "Paris" } }] } },
  { when: { toolOutput: "Sunny in", agent: "weather" }, reply: (r) => ({ text: r.last.kind === "tool" ? r.last.outputs[0]!.output : "" }) }
]
