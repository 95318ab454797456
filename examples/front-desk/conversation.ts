/**
 * The demo conversation, line by line: two handoffs to the weather specialist and two
 * transfers back, the booking task, the parallel note + transfer turn. Used by the tests and
 * handy to pipe in: `node examples/front-desk/conversation.ts | npm start`.
 */
export const demoConversation = [
  "What's the weather in Paris?",
  "How about Tokyo?",
  "Thanks, that's all",
  "I'd like to book an appointment",
  "My name is Ada Lovelace",
  "next Friday",
  "Please note that I prefer mornings, and what's the weather in Oslo?",
  "thanks!",
  "Bye"
] as const

if (import.meta.main) process.stdout.write(demoConversation.join("\n") + "\n")
