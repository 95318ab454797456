/**
 * The built-in demo model: a rules-based `LanguageModel` (on `ScriptedModel`) that makes the
 * same tool calls a real model would for the demo's phrases, so the front desk runs with no API
 * key. It decides like a model: from the tools it is offered (which tell it which agent it is)
 * and the conversation in the prompt. Anything it does not understand gets a short answer that
 * lists the phrases it does.
 */
import type { Duration, Layer } from "effect"
import type { LanguageModel, Prompt } from "effect/ai"
import { ScriptedModel } from "@baton-voice/baton/testing"
import { instructionsFor } from "./agents.ts"
import { findCity, findDate, findName, findNote, mentions } from "./demoParse.ts"

/** The demo's three flows, one phrase each (looser phrasings work too: "I'd like to book a
 * table", "save a note that ..."), for the page and the console. */
export const demoFlows = [
  "What's the weather in Paris?",
  "I'd like to book an appointment",
  "Please note that I prefer mornings, and what's the weather in Oslo?"
] as const

/** What the demo model understands, for the console header and its fallback answer. */
export const demoPhrases = [
  "What's the weather in Paris?",
  "Thanks, that's all",
  "I'd like to book an appointment",
  "Please note that I prefer mornings, and what's the weather in Oslo?",
  "Bye"
] as const

export interface DemoOptions {
  /** Streams replies word by word with this delay between words (default: all at once). */
  readonly chunkDelay?: Duration.Input
  /**
   * Keep every request with its whole prompt in the `ScriptedModel` recorder (default false: a
   * served model holds nothing per request; tests that read `requests` turn it on).
   */
  readonly record?: boolean
}

interface Reply {
  readonly text?: string
  readonly toolCalls?: ReadonlyArray<{ readonly name: string; readonly arguments?: Record<string, unknown> }>
}

const say = (text: string, toolCalls?: Reply["toolCalls"]): Reply => (toolCalls ? { text, toolCalls } : { text })
const call = (name: string, args: Record<string, unknown> = {}) => ({ name, arguments: args })

const userTexts = (prompt: Prompt.Prompt): ReadonlyArray<string> =>
  prompt.content.flatMap((message) =>
    message.role === "user" ? [message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")] : []
  )

const lastUserText = (prompt: Prompt.Prompt) => userTexts(prompt).at(-1) ?? ""

const quoted = (phrases: ReadonlyArray<string>) => phrases.map((phrase) => `"${phrase}"`).join(", ")

const fallback = say(
  `Sorry, I'm the built-in demo model, so I only understand a few phrases. Try: ${quoted(demoPhrases)}. ` +
    "For free-form conversation, run with a real model (see the header)."
)

// Kelly at the front desk.
const greeter = (request: ScriptedModel.RecordedRequest): Reply => {
  const last = request.last
  if (last.kind === "instructions") {
    if (last.text.includes(instructionsFor.welcomeBack)) return say("Welcome back! Anything else I can do: a booking, a note?")
    return say("Hi, I'm Kelly at the front desk. I can check the weather, book an appointment or take a note. How can I help?")
  }
  if (last.kind === "tool") {
    const booked = last.outputs.find((o) => o.name === "book_appointment")
    if (booked) {
      const match = /^Booked: (.+) on (.+), reference (\S+?)\.?$/.exec(booked.output)
      return match
        ? say(`You're all set, ${match[1]}: your appointment is booked for ${match[2]}. Your reference is ${match[3]}.`)
        : say("No problem, I haven't booked anything. Anything else?")
    }
    const note = last.outputs.find((o) => o.name === "save_note" && !o.isError)
    if (note) return say(`I've noted that: ${note.output.replace(/^Saved note: /, "")}. Anything else?`)
    return say("Sorry, something went wrong there. Could you say that again?")
  }
  if (last.kind !== "user") return say("How can I help?")
  const text = last.text
  const note = findNote(text)
  if (note && mentions.weather(text)) {
    const city = findCity(text)
    return say("I'll note that and get our weather specialist.", [
      call("save_note", { text: note }),
      call("transfer_to_weather", { reason: city ? `weather in ${city}` : "weather question" })
    ])
  }
  if (note) return say("", [call("save_note", { text: note })])
  if (mentions.booking(text)) return say("Sure, let's get that booked.", [call("book_appointment")])
  if (mentions.weather(text)) {
    const city = findCity(text)
    return say("Let me get our weather specialist.", [call("transfer_to_weather", { reason: city ? `weather in ${city}` : "weather question" })])
  }
  if (mentions.bye(text)) return say("Goodbye, have a lovely day!")
  if (mentions.hello(text)) return say("Hello! I can check the weather, book an appointment or take a note.")
  if (mentions.thanks(text)) return say("You're welcome! Anything else?")
  return fallback
}

const lookup = (intro: string, city: string): Reply => say(intro, [call("lookup_weather", { city })])

// Sunny, the weather specialist.
const weather = (request: ScriptedModel.RecordedRequest): Reply => {
  const last = request.last
  if (last.kind === "instructions") {
    const resumed = last.text.includes(instructionsFor.weatherResume)
    const city = findCity(lastUserText(request.prompt))
    if (city) return lookup(resumed ? `Sunny again. Let me check ${city}.` : `Hi, Sunny here, the weather specialist. Let me check ${city}.`, city)
    return say(resumed ? "Sunny again. Which city?" : "Hi, Sunny here, the weather specialist. Which city would you like the weather for?")
  }
  if (last.kind === "tool") {
    const output = last.outputs.find((o) => o.name === "lookup_weather")
    const match = output && !output.isError ? /^(.+?): (.+), (-?\d+°C)/.exec(output.output) : null
    if (!match) return say("Sorry, I couldn't get that forecast. Which city was it?")
    return say(`In ${match[1]} it's ${match[2]} and ${match[3]}. Another city? Or say "thanks" to go back to the front desk.`)
  }
  if (last.kind !== "user") return say("Which city?")
  const text = last.text
  const city = findCity(text)
  if (city && !mentions.booking(text)) return lookup("", city)
  if (mentions.thanks(text) || mentions.bye(text) || mentions.booking(text) || mentions.note(text)) {
    const reason = mentions.thanks(text) || mentions.bye(text) ? "done with the weather" : "asked about something else"
    return say("Happy to help. I'll pass you back to the front desk.", [call("transfer_to_greeter", { reason })])
  }
  if (mentions.weather(text)) return say("Which city?")
  return say(`I'm the weather specialist (demo model): name a city, like "Oslo", or say "thanks" to go back to the front desk.`)
}

// The booking form (an AgentTask).
const booking = (request: ScriptedModel.RecordedRequest): Reply => {
  const last = request.last
  if (last.kind === "tool") return say("Sorry, I need a full name and a date. What name should I put the booking under?")
  const texts = userTexts(request.prompt)
  if (last.kind === "user" && mentions.cancel(last.text)) return say("", [call("cancel_booking")])
  const name = texts.map(findName).filter((n) => n !== undefined).at(-1)
  const date = texts.map(findDate).filter((d) => d !== undefined).at(-1)
  if (name && date) return say("", [call("record_booking", { name, date })])
  const understood = last.kind !== "user" || findName(last.text) !== undefined || findDate(last.text) !== undefined
  const sorry = understood ? "" : `Sorry, I didn't catch that (try "My name is Ada Lovelace" or "next Friday"; "cancel" stops). `
  if (name) return say(`${sorry}Thanks, ${name}. Which date would you like?`)
  if (date) return say(`${sorry}${date} works. What name should I put the booking under?`)
  return say(`${sorry}Happy to book that. What name should I put it under, and which date would you like?`)
}

/** Which agent is asking, from the tools it offers (as a model would see it). */
export const respond = (request: ScriptedModel.RecordedRequest): Reply => {
  if (request.tools.includes("record_booking")) return booking(request)
  if (request.tools.includes("lookup_weather")) return weather(request)
  if (request.tools.includes("transfer_to_weather")) return greeter(request)
  return request.last.kind === "user" ? fallback : say("How can I help?")
}

const words = (text: string): ReadonlyArray<string> => text.match(/\S+\s*/g) ?? []

/** The demo model as a `LanguageModel` layer (plus the `ScriptedModel` recorder, empty unless `record`). */
export const layer = (options: DemoOptions = {}): Layer.Layer<LanguageModel.LanguageModel | ScriptedModel.ScriptedModel> =>
  ScriptedModel.layer([
    {
      when: () => true,
      reply: (request) => {
        const reply = respond(request)
        const text = reply.text === undefined || reply.text === "" ? undefined : reply.text
        return {
          ...(text === undefined ? {} : { text: options.chunkDelay === undefined ? text : words(text) }),
          ...(options.chunkDelay === undefined ? {} : { chunkDelay: options.chunkDelay }),
          ...(reply.toolCalls ? { toolCalls: reply.toolCalls } : {})
        }
      }
    }
  ], { record: options.record ?? false })
