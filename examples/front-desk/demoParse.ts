/**
 * The demo model's "understanding": small, predictable extractors for the phrases of the demo.
 * They are deliberately simple; a real model replaces all of this.
 */

const KNOWN_CITIES = [
  "amsterdam", "athens", "bangkok", "barcelona", "berlin", "boston", "cairo", "chicago", "dublin", "edinburgh",
  "helsinki", "lisbon", "london", "los angeles", "madrid", "mexico city", "milan", "montreal", "mumbai", "munich",
  "nairobi", "new york", "oslo", "paris", "prague", "rome", "san francisco", "seoul", "singapore", "stockholm",
  "sydney", "tokyo", "toronto", "vienna", "warsaw", "zurich"
]

const capitalize = (text: string) =>
  text.split(/\s+/).map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join(" ")

// Words a bare reply may be that are not places ("Bye", "Thanks").
const NOT_CITIES = new Set([
  "the", "weather", "it", "there", "general", "today", "tomorrow", "me", "a", "an",
  "bye", "goodbye", "thanks", "hello", "hi", "yes", "no", "ok", "okay", "done", "back"
])

/** A city named in the text: a known city anywhere, or a capitalised word after "in", "for", "about", "at". */
export const findCity = (text: string): string | undefined => {
  const lower = text.toLowerCase()
  const known = KNOWN_CITIES.find((city) => new RegExp(`\\b${city}\\b`).test(lower))
  if (known) return capitalize(known)
  const match = /\b(?:in|for|about|at)\s+(\p{Lu}[\p{L}'-]*(?:\s+\p{Lu}[\p{L}'-]*)?)/u.exec(text)
  if (match && !NOT_CITIES.has(match[1]!.toLowerCase())) return match[1]
  // A reply that is just a capitalised name ("Reykjavik", "Buenos Aires").
  const bare = /^\s*(\p{Lu}[\p{L}'-]*(?:\s+\p{Lu}[\p{L}'-]*)?)\s*[?.!]?\s*$/u.exec(text)
  return bare && !NOT_CITIES.has(bare[1]!.toLowerCase()) ? bare[1] : undefined
}

const MONTH = "(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\\.?"
const WEEKDAY = "(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
const DATE = new RegExp(
  [
    "\\d{4}-\\d{2}-\\d{2}",
    "\\d{1,2}/\\d{1,2}(?:/\\d{2,4})?",
    "(?:the\\s+)?day after tomorrow",
    "today",
    "tomorrow",
    `(?:next|this|on)?\\s*${WEEKDAY}(?:\\s+(?:morning|afternoon|evening))?`,
    `${MONTH}\\s+\\d{1,2}(?:st|nd|rd|th)?`,
    `\\d{1,2}(?:st|nd|rd|th)?\\s+(?:of\\s+)?${MONTH}`
  ].map((p) => `(?:${p})`).join("|"),
  "i"
)

/** A date as the caller said it ("next Friday", "June 12", "2025-06-12", "tomorrow"). */
export const findDate = (text: string): string | undefined => {
  const match = DATE.exec(text)
  if (!match) return undefined
  return match[0].replace(/^on\s+/i, "").trim()
}

const NAME_WORD = "[\\p{L}][\\p{L}'-]*"
const STOP = new Set(["and", "on", "for", "please", "at", "the", "next", "this", "i", "i'd", "i'm"])

const takeName = (words: ReadonlyArray<string>, capitalised: boolean) => {
  const out: Array<string> = []
  for (const word of words) {
    if (STOP.has(word.toLowerCase()) || (capitalised && !/^\p{Lu}/u.test(word))) break
    out.push(word)
    if (out.length === 4) break
  }
  return out.length > 0 ? capitalize(out.join(" ")) : undefined
}

/** A person's name: "my name is ...", "I'm Ada", "for Ada Lovelace", or a line that is just a name. */
export const findName = (text: string): string | undefined => {
  const date = findDate(text)
  const rest = (date ? text.replace(date, " ") : text).replace(/[,.!?;:]/g, " ")
  const explicit = new RegExp(`\\b(?:my name is|my name's|name is|name:)\\s+((?:${NAME_WORD}\\s*){1,4})`, "iu").exec(rest)
  if (explicit) return takeName(explicit[1]!.trim().split(/\s+/), false)
  const introduced = new RegExp(`\\b(?:i'm|i am|this is|it's|under|for)\\s+((?:${NAME_WORD}\\s*){1,4})`, "iu").exec(rest)
  if (introduced) {
    const name = takeName(introduced[1]!.trim().split(/\s+/), true)
    if (name) return name
  }
  const words = rest.trim().split(/\s+/).filter((word) => word !== "")
  const bare = words.length >= 1 && words.length <= 4 && words.every((word) => /^\p{Lu}[\p{L}'-]*$/u.test(word))
  return bare ? words.join(" ") : undefined
}

/** The note in "note that I prefer mornings, and what's the weather in Oslo?" (or "save a note
 * that ...", "write down that ...", "remember: ..."). */
export const findNote = (text: string): string | undefined => {
  const match = /\b(?:(?:save|take|make|add)\s+(?:a|this|the)\s+note|note(?:\s+down)?|remember|(?:write|jot|put)\s+down|save)\s*(?:that\b|:)?\s*(.+)$/i.exec(text)
  if (!match) return undefined
  const note = match[1]!
    .split(/,?\s+\b(?:and|also|then)\b\s+(?=(?:what|what's|how|tell|check|is)\b)/i)[0]!
    .replace(/[\s,.;!?]+$/, "")
    .trim()
  return note === "" ? undefined : note
}

export const mentions = {
  weather: (text: string) => /\b(weather|forecast|temperature|rain|sunny|snow|warm|cold)\b/i.test(text),
  booking: (text: string) => /\b(book (?:an?|me|us|it|for|one|in)|booking|appointment|reservation|reserve|table for|schedule (?:a|an|me))\b/i.test(text),
  note: (text: string) => findNote(text) !== undefined,
  thanks: (text: string) => /\b(thanks|thank you|that's all|that is all|done|back)\b/i.test(text),
  bye: (text: string) => /\b(bye|goodbye|see you)\b/i.test(text),
  hello: (text: string) => /^\s*(hi|hello|hey|good (morning|afternoon|evening))\b/i.test(text),
  cancel: (text: string) => /\b(cancel|never ?mind|forget it|stop)\b/i.test(text)
}
