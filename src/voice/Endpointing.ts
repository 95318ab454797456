/**
 * Adaptive endpointing: how long a silence ends the user's turn, from what their words so far
 * say. Words that end a sentence, or a short answer to the question the agent just asked, end it
 * after `minMs`; words that trail off (a conjunction, a filler, an article, a comma) wait `maxMs`
 * for the rest; words that give no sign either way (speech-to-text engines without punctuation)
 * end it after `minMs` too, as the peers do without a turn-detection model.
 *
 * @since 0.1.0
 * @packageDocumentation
 */

/**
 * Why the turn waits the silence it does.
 *
 * @since 0.1.0
 * @category models
 */
export type Reason = "sentence_end" | "answer" | "trailing_off" | "no_sign"

/**
 * A decision: the reason and the silence (ms) that ends the turn.
 *
 * @since 0.1.0
 * @category models
 */
export interface Decision {
  readonly reason: Reason
  readonly delayMs: number
}

/** Last words after which a speaker is not done (English). */
const TRAILING = new Set([
  "and", "or", "but", "so", "because", "cause", "if", "then", "than", "that", "which", "who", "whose", "where", "when", "while",
  "um", "uh", "er", "erm", "hmm", "mm", "like", "the", "a", "an", "to", "of", "for", "with", "in", "on", "at", "from", "by",
  "about", "into", "my", "your", "our", "their", "his", "her", "its", "is", "are", "was", "were", "am", "i", "i'm", "we're",
  "also", "plus", "maybe", "just", "actually", "well"
])

const YES_NO = /^(yes|yeah|yep|no|nope|nah|sure|ok|okay|right|correct|exactly|please|thanks|thank you)\b/i

/**
 * How long a silence ends a turn whose words so far are `text`; `asked`: the agent's last words
 * ended with a question.
 *
 * @since 0.1.0
 * @category decisions
 */
export const decide = (text: string, asked: boolean, minMs: number, maxMs: number): Decision => {
  const trimmed = text.trim()
  if (trimmed === "") return { reason: "no_sign", delayMs: minMs }
  if (/(,|;|:|-|\.\.\.|…)$/.test(trimmed)) return { reason: "trailing_off", delayMs: maxMs }
  const words = trimmed.toLowerCase().replace(/[.!?]+$/, "").split(/\s+/)
  if (TRAILING.has(words[words.length - 1]!)) return { reason: "trailing_off", delayMs: maxMs }
  if (/[.!?]$/.test(trimmed)) return { reason: "sentence_end", delayMs: minMs }
  if (asked && (words.length <= 4 || YES_NO.test(trimmed))) return { reason: "answer", delayMs: minMs }
  return { reason: "no_sign", delayMs: minMs }
}
