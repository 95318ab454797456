import type { ScriptedModel } from "@baton-voice/baton/testing"

export const rules: ReadonlyArray<ScriptedModel.Rule> = [
  {
    when: { user: "bill", agent: "front" },
    reply: {
      text: "Let me note that and get billing.",
      toolCalls: [
        { name: "save_note", arguments: { text: "caller disputes the March invoice" } },
        { name: "transfer_to_billing" }
      ]
    }
  },
  {
    when: { instructions: "introduce yourself as billing" },
    reply: (request) => ({
      text: JSON.stringify(request.prompt.content).includes("March invoice")
        ? "Billing here. I see you're disputing the March invoice."
        : "Billing here."
    })
  },
  { when: { agent: "front" }, reply: { text: "(the front agent would keep talking here)" } }
]
