/**
 * The front desk: a greeter (Kelly) that
 * - transfers weather questions to a weather specialist (Sunny), who hands back when done;
 * - books appointments with an `AgentTask` that collects a name and a date (started from the
 *   `book_appointment` tool; its typed result comes back to the tool, and Kelly confirms);
 * - saves notes, also in the same response as a transfer (two tool calls in one batch).
 *
 * The per-reply instructions are exported so the demo model can recognise them.
 */
import { Effect, Schema } from "effect"
import { Agent, AgentTask, Handoff, Tool } from "@baton-voice/baton"

export interface Booking {
  readonly name: string
  readonly date: string
  readonly reference: string
}

/** The session's userdata: what the front desk wrote down. */
export interface FrontDesk {
  readonly notes: Array<string>
  readonly bookings: Array<Booking>
}

export const makeFrontDesk = (): FrontDesk => ({ notes: [], bookings: [] })

/** The userdata's Schema: a durable session journals its JSON form and a resume decodes it. */
export const FrontDeskSchema: Schema.Codec<FrontDesk> = Schema.Struct({
  notes: Schema.mutable(Schema.Array(Schema.String)),
  bookings: Schema.mutable(Schema.Array(Schema.Struct({ name: Schema.String, date: Schema.String, reference: Schema.String })))
})

export const instructionsFor = {
  greet: "greet the caller and say what you can help with",
  welcomeBack: "the caller is back from the weather specialist: welcome them back and ask if there is anything else",
  weatherEnter: "introduce yourself as the weather specialist and answer the caller's weather question",
  weatherResume: "the caller is back: answer their latest weather question",
  askBooking: "ask for whatever is still missing for the booking: the caller's name and the date"
} as const

const CONDITIONS = ["sunny", "partly cloudy", "overcast", "light rain", "windy", "clear skies"]

/** Demo weather data: the same answer for the same city, no network. */
export const forecast = (city: string): string => {
  let h = 2166136261
  for (const char of city.toLowerCase()) h = Math.imul(h ^ char.codePointAt(0)!, 16777619) >>> 0
  return `${city}: ${CONDITIONS[h % CONDITIONS.length]}, ${(h >>> 8) % 25 + 5}°C (demo data)`
}

const reasonParameter = Schema.Struct({
  reason: Schema.optionalKey(Schema.String.annotate({ description: "Why the caller is transferred, in a few words" }))
})

const transfer = (name: string, description: string, target: () => Agent.Agent, message: string) =>
  Tool.make(name, {
    description,
    parameters: reasonParameter,
    handler: ({ reason }) => Effect.succeed(Handoff.to(target, { message, ...(reason ? { reason } : {}) }))
  })

export const lookupWeather = Tool.make("lookup_weather", {
  description: "Look up the current weather for a city",
  parameters: Schema.Struct({ city: Schema.String.check(Schema.isMinLength(1)).annotate({ description: "The city" }) }),
  handler: ({ city }) => Effect.succeed(forecast(city.trim()))
})

export const saveNote = Tool.make("save_note", {
  description: "Save a note about the caller for the staff (preferences, requests, anything to remember)",
  parameters: Schema.Struct({ text: Schema.String.check(Schema.isMinLength(1)).annotate({ description: "The note" }) }),
  handler: ({ text }, { userdata }: Tool.ToolContext<FrontDesk>) =>
    Effect.sync(() => {
      userdata.notes.push(text)
      return `Saved note: ${text}`
    })
})

/** What the booking task completes with. */
export interface BookingRequest {
  readonly name: string
  readonly date: string
}

export const collectBooking: AgentTask.AgentTask<BookingRequest> = AgentTask.make<BookingRequest>({
  name: "booking",
  instructions: "You collect what is needed to book an appointment: the caller's full name and the date they want. " +
    "Ask for whatever is missing, one short question at a time. When you have both, call record_booking. " +
    "If the caller no longer wants to book, call cancel_booking.",
  // The task sees the turn that asked for the booking ("... for Ada Lovelace on Friday"), not the whole call.
  context: { lastTurns: 1, excludeFunctionCalls: true },
  tools: [
    Tool.make("record_booking", {
      description: "Record the booking once you have the caller's name and the date",
      parameters: Schema.Struct({
        name: Schema.String.check(Schema.isMinLength(2)).annotate({ description: "The caller's full name" }),
        date: Schema.String.check(Schema.isMinLength(2)).annotate({ description: "The date, as the caller said it" })
      }),
      handler: ({ name, date }) => AgentTask.complete(collectBooking, { name: name.trim(), date: date.trim() })
    }),
    Tool.make("cancel_booking", {
      description: "Stop: the caller no longer wants to book",
      handler: () => AgentTask.fail(collectBooking, "the caller cancelled the booking")
    })
  ],
  onEnter: Agent.reply({ instructions: instructionsFor.askBooking }).pipe(Effect.asVoid)
})

export const bookAppointment = Tool.make("book_appointment", {
  description: "Book an appointment. A short form asks the caller for their name and the date, then the booking is made.",
  handler: (_, { userdata }: Tool.ToolContext<FrontDesk>) =>
    AgentTask.run(collectBooking).pipe(
      Effect.map(({ date, name }) => {
        const booking: Booking = { name, date, reference: `FD-${userdata.bookings.length + 1}` }
        userdata.bookings.push(booking)
        return `Booked: ${name} on ${date}, reference ${booking.reference}.`
      }),
      Effect.catchTag("TaskError", (error) => Effect.succeed(`Not booked: ${error.message}.`))
    )
})

export const greeter: Agent.Agent = Agent.make({
  name: "greeter",
  instructions: "You are Kelly, the front desk of a small office. Be brief and warm. " +
    "Transfer weather questions to the weather specialist (transfer_to_weather). " +
    "Book appointments with book_appointment. Save anything the caller wants remembered with save_note; " +
    "if they also ask about the weather, call save_note and transfer_to_weather in the same response.",
  tools: [
    transfer("transfer_to_weather", "Transfer the caller to Sunny, the weather specialist", () => weather, "Transferred to the weather specialist."),
    bookAppointment,
    saveNote
  ],
  onEnter: Agent.reply({ instructions: instructionsFor.greet }).pipe(Effect.asVoid),
  onResume: Agent.reply({ instructions: instructionsFor.welcomeBack }).pipe(Effect.asVoid)
})

export const weather: Agent.Agent = Agent.make({
  name: "weather",
  instructions: "You are Sunny, a weather specialist. Answer weather questions with lookup_weather. " +
    "When the caller is done with the weather or asks for anything else, transfer back to the front desk (transfer_to_greeter).",
  tools: [
    lookupWeather,
    transfer("transfer_to_greeter", "Transfer the caller back to Kelly at the front desk", () => greeter, "Transferred back to the front desk.")
  ],
  onEnter: Agent.reply({ instructions: instructionsFor.weatherEnter }).pipe(Effect.asVoid),
  onResume: Agent.reply({ instructions: instructionsFor.weatherResume }).pipe(Effect.asVoid)
})

/** Every agent and task a front desk session may run: what a resume finds them by (their names). */
export const frontDeskAgents: ReadonlyArray<Agent.Agent> = [greeter, weather, collectBooking]
