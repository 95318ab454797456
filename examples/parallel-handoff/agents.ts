/**
 * Seed 002's pair: a front agent whose model saves a note and transfers to billing in the same
 * response. The note is kept, the transfer happens after both calls settle, and the front
 * agent says nothing more.
 */
import { Effect, Schema } from "effect"
import { Agent, Tool } from "@baton-voice/baton"

export interface Notes {
  readonly saved: Array<string>
}

export const saveNote = Tool.make("save_note", {
  description: "Save a note about the caller for later",
  parameters: Schema.Struct({ text: Schema.String }),
  handler: ({ text }, { userdata }: Tool.ToolContext<Notes>) =>
    Effect.sleep("300 millis").pipe(Effect.andThen(Effect.sync(() => userdata.saved.push(text))), Effect.as(`Saved: ${text}`))
})

export const front: Agent.Agent = Agent.make({
  name: "front",
  instructions: "You answer the phone. Save notes and transfer billing questions.",
  tools: [saveNote, Tool.handoff("transfer_to_billing", () => billing, { description: "Transfer to billing" })]
})

export const billing: Agent.Agent = Agent.make({
  name: "billing",
  instructions: "You handle billing. Use the notes in the conversation.",
  onEnter: Agent.reply({ instructions: "introduce yourself as billing and mention the note" }).pipe(Effect.asVoid)
})
