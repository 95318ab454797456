import type { ScriptedModel } from "@baton-voice/baton/testing"

export const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "flight to", agent: "concierge" }, reply: { toolCalls: [{ name: "search_flights", arguments: { destination: "Lisbon" } }] } },
  { when: { toolOutput: "This takes about a minute", agent: "concierge" }, reply: { text: "Please hold on while I search." } },
  { when: { toolOutput: "comparing prices", agent: "concierge" }, reply: { text: "Still comparing prices, almost there." } },
  { when: { instructions: "present the flights" }, reply: { text: "I have three flights to Lisbon for you." } },
  { when: { user: "how long", agent: "concierge" }, reply: { text: "Just a moment more." } }
]
