/**
 * What the user heard of a reply cut short: the sentences whose audio was played in full, and
 * of the sentence playing when it was cut, the share of its words matching the share of its
 * audio played (TTS engines give no word timings; speech is close enough to even for this).
 */

export interface Spoken {
  readonly text: string
  /** Where its audio starts in the reply's audio, and how long it is (ms). */
  readonly startMs: number
  readonly durationMs: number
}

export const heard = (sentences: ReadonlyArray<Spoken>, playedMs: number): string => {
  const parts: Array<string> = []
  for (const sentence of sentences) {
    if (playedMs >= sentence.startMs + sentence.durationMs) {
      parts.push(sentence.text)
      continue
    }
    if (playedMs <= sentence.startMs || sentence.durationMs <= 0) break
    const words = sentence.text.split(/\s+/).filter((w) => w !== "")
    const share = (playedMs - sentence.startMs) / sentence.durationMs
    const count = Math.floor(words.length * share)
    if (count > 0) parts.push(words.slice(0, count).join(" "))
    break
  }
  return parts.join(" ")
}
