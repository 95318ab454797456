/**
 * Seed 003: a long-running tool that reports progress ("please hold on"), keeps working, and
 * then hands off. The handoff happens when the tool finishes, exactly as an immediate one.
 */
import { Effect, Schema } from "effect"
import { Agent, Handoff, Tool } from "@baton-voice/baton"

export const searchFlights = Tool.make("search_flights", {
  description: "Search flights to a city; takes a while",
  parameters: Schema.Struct({ destination: Schema.String }),
  cancellable: true,
  handler: ({ destination }, { progress }) =>
    Effect.gen(function*() {
      yield* progress(`Searching flights to ${destination}. This takes about a minute.`)
      yield* Effect.sleep("30 seconds")
      yield* progress(`Found 3 airlines flying to ${destination}, comparing prices.`)
      yield* Effect.sleep("30 seconds")
      return Handoff.to(() => booking, { message: `3 flights to ${destination} found; the booking agent takes over.` })
    })
})

export const concierge: Agent.Agent = Agent.make({
  name: "concierge",
  instructions: "You are a travel concierge. Search flights with search_flights.",
  tools: [searchFlights]
})

export const booking: Agent.Agent = Agent.make({
  name: "booking",
  instructions: "You book the flight the caller picks.",
  onEnter: Agent.reply({ instructions: "present the flights found" }).pipe(Effect.asVoid)
})
