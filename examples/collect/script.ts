/** The scripted model the example runs on when no model is configured (and its test uses). */
import type { ScriptedModel } from "@baton-voice/baton/testing"

const lastOutput = (r: ScriptedModel.RecordedRequest) => (r.last.kind === "tool" ? r.last.outputs[0]!.output : "")

export const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: /sign me up/, agent: "desk" }, reply: { toolCalls: [{ name: "sign_up" }] } },
  { when: { toolOutput: "Signed up", agent: "desk" }, reply: (r) => ({ text: `${lastOutput(r)} Anything else?` }) },
  { when: { user: /that's all/, agent: "desk" }, reply: { toolCalls: [{ name: "end_call" }] } },
  { when: { user: /at example/, agent: "collect_email" }, reply: { toolCalls: [{ name: "record_email", arguments: { email: "jane dot doe at example dot com" } }] } },
  { when: { user: "yes", agent: "collect_email" }, reply: { toolCalls: [{ name: "confirm_email", arguments: { email: "jane.doe@example.com" } }] } },
  { when: { user: /May/, agent: "collect_date" }, reply: { toolCalls: [{ name: "record_date", arguments: { date: "1990-05-03" } }] } },
  // The task sees the caller's context (its last "yes" was the email's): it confirms once it read the date back.
  { when: (r) => r.agent === "collect_date" && r.last.kind === "user" && r.last.text === "yes" && JSON.stringify(r.prompt.content).includes("May 3, 1990"), reply: { toolCalls: [{ name: "confirm_date", arguments: { date: "1990-05-03" } }] } },
  { when: { toolOutput: "Read it back" }, reply: (r) => ({ text: lastOutput(r).replace(/^Read it back to the caller as "(.*)" and ask.*$/, "I have $1. Is that right?") }) },
  { when: { agent: "collect_email" }, reply: { text: "What is your email address?" } },
  { when: { agent: "collect_date" }, reply: { text: "And your date of birth?" } }
]
