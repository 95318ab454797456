/**
 * The scripted model for the health-service demo and its test: what a real model would say and
 * call for each step of the conversation.
 */
import type { ScriptedModel } from "@baton-voice/baton/testing"

export const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { instructions: "ask how you can help" }, reply: { text: "Hello, this is the clinic. How can I help you today?" } },
  { when: { user: "schedule", agent: "verify_intent" }, reply: { toolCalls: [{ name: "confirm_intent", arguments: { intent: "schedule" } }] } },
  { when: { instructions: "name and date of birth" }, reply: { text: "Sure. May I have the patient's name and date of birth?" } },
  {
    when: { user: /born/, agent: "identify_patient" },
    reply: (request) => {
      const text = request.last.kind === "user" ? request.last.text : ""
      const name = text.split(",")[0]?.trim() ?? ""
      const date = /\d{4}-\d{2}-\d{2}/.exec(text)?.[0] ?? text
      return { toolCalls: [{ name: "record_patient", arguments: { name, date_of_birth: date } }] }
    }
  },
  { when: { toolOutput: "Invalid arguments", agent: "identify_patient" }, reply: { text: "Sorry, could you give the date of birth as year, month and day?" } },
  { when: { instructions: "when the patient would like" }, reply: { text: "Thank you. When would you like to come in?" } },
  {
    when: { user: /day/, agent: "schedule_visit" },
    reply: (request) => {
      const text = request.last.kind === "user" ? request.last.text : ""
      const day = /(monday|tuesday|wednesday|thursday|friday)/i.exec(text)?.[0] ?? "Monday"
      const time = /\d{1,2}(:\d{2})?\s*(am|pm)?/i.exec(text)?.[0] ?? "9am"
      return { toolCalls: [{ name: "book_visit", arguments: { day, time } }] }
    }
  },
  {
    when: { instructions: "confirm the booking" },
    reply: (request) => ({
      text: `You're all set: ${request.last.kind === "instructions" ? request.last.text.replace("confirm the booking for ", "") : ""}. See you then!`
    })
  }
]
