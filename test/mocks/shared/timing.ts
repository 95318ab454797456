/** Live-clock helpers shared by the mocks (they run over real sockets, never a TestClock). */

/** Resolves after `ms` milliseconds; `0` still yields to the event loop (setImmediate). */
export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => (ms > 0 ? setTimeout(resolve, ms) : setImmediate(resolve)))

/** Resolves at the absolute time `deadline` (performance.now() based), never earlier. */
export const sleepUntil = (deadline: number): Promise<void> => sleep(Math.max(0, deadline - performance.now()))

/**
 * Formats a duration the way protobuf JSON does (`"1s"`, `"1.500s"`), used by Gemini `goAway.timeLeft`.
 */
export const protoDuration = (ms: number): string =>
  ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(3)}s`

/** Parses a protobuf JSON duration (`"1.5s"`) back into milliseconds. */
export const parseProtoDuration = (s: string): number => Math.round(Number.parseFloat(s.replace(/s$/, "")) * 1000)
