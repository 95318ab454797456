/**
 * A sign-up desk built on the ready-made tasks: it collects the caller's email address and date
 * of birth, each read back and confirmed, and ends the call when the caller is done.
 */
import { Effect } from "effect"
import { Agent, AgentTask, CallTools, CollectDate, CollectEmail, Tool } from "@baton-voice/baton"

const email = CollectEmail.make()
const birthday = CollectDate.make({ what: "date of birth" })

export const signUp = Tool.make("sign_up", {
  description: "Sign the caller up: collects their email address and date of birth",
  handler: () =>
    Effect.gen(function*() {
      const address = yield* AgentTask.run(email)
      const born = yield* AgentTask.run(birthday)
      return `Signed up ${address}, born ${born.year}-${String(born.month).padStart(2, "0")}-${String(born.day).padStart(2, "0")}.`
    })
})

export const desk = Agent.make({
  name: "desk",
  instructions: "Sign callers up with sign_up. When they are done, end the call.",
  tools: [signUp, CallTools.endCall({ goodbye: "You're all set. Goodbye!" })]
})
