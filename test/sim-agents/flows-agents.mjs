// An agents module with every flow rules 3, 5, 6 and 9 speak about, written correctly: hooks
// on each agent (onEnter, onExit, onResume; some say something, some take a while), handoffs
// both ways, a tool that runs an AgentTask (which completes or fails), and long-running tools
// that report progress and then finish, one of them with a handoff (a deferred handoff).
// `baton sim --agents` must find every seed keeping the rules.
import { Effect, Schema } from "effect"
import { Agent, AgentTask, Handoff, Tool } from "@baton-voice/baton"

// Words a hook says: an agent handed the floor and at once handed away has none to speak with
// (a FloorError), which is no failure of the hook.
const says = (text) => Agent.say(text).pipe(Effect.asVoid, Effect.catchTag("FloorError", () => Effect.void))
const replies = Agent.reply().pipe(Effect.asVoid, Effect.catchTag("FloorError", () => Effect.void))

const confirm = AgentTask.make({
  name: "confirm",
  instructions: "Ask the caller to confirm the order.",
  tools: [
    Tool.make("answer", {
      description: "The caller's answer",
      parameters: Schema.Struct({ yes: Schema.Boolean }),
      handler: ({ yes }) => (yes ? AgentTask.complete(confirm, "confirmed") : AgentTask.fail(confirm, "declined"))
    })
  ],
  onEnter: says("Shall I place the order?"),
  onExit: Effect.sleep("50 millis")
})

const billing = Agent.make({
  name: "billing",
  instructions: "Place orders.",
  tools: [
    Tool.make("place_order", {
      description: "Place an order once the caller confirms it",
      parameters: Schema.Struct({ item: Schema.String }),
      handler: ({ item }) =>
        AgentTask.run(confirm).pipe(
          Effect.map((answer) => `${item}: ${answer}`),
          Effect.catch((error) => Effect.succeed(`${item} not placed: ${error.message}`))
        )
    }),
    Tool.handoff("back_to_greeter", () => greeter)
  ],
  onEnter: replies,
  onResume: says("Back to billing."),
  onExit: Effect.sleep("200 millis")
})

const greeter = Agent.make({
  name: "greeter",
  instructions: "Greet the caller; track parcels; transfer orders to billing.",
  tools: [
    Tool.handoff("transfer_to_billing", () => billing),
    Tool.make("track_parcel", {
      description: "Where a parcel is (takes a while)",
      parameters: Schema.Struct({ parcel: Schema.String }),
      handler: ({ parcel }, context) =>
        Effect.gen(function*() {
          yield* context.progress(`Looking up ${parcel}`)
          yield* Effect.sleep("3 seconds")
          return `${parcel} is on its way`
        })
    }),
    Tool.make("find_specialist", {
      description: "Find a billing specialist, then transfer (takes a while)",
      handler: (_, context) =>
        Effect.gen(function*() {
          yield* context.progress("Finding a specialist")
          yield* Effect.sleep("2 seconds")
          return Handoff.to(billing)
        })
    })
  ],
  onEnter: says("Hello, how can I help?"),
  onResume: says("Welcome back."),
  onExit: Effect.sleep("100 millis")
})

export const agent = greeter
// Every agent a session may run: `baton sim` hands off to each and scripts its model (the task
// too, so that its model calls `answer`).
export const agents = [greeter, billing, confirm]
