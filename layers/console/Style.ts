/**
 * ANSI styling for the console, on only when stdout is a terminal and `NO_COLOR` is unset or
 * empty (https://no-color.org). With colours off every function returns its text unchanged, so
 * piped output and tests see plain text.
 */

/**
 * The console's ANSI styles (bold, dim, colours), each the identity when colours are off.
 *
 * @since 0.1.0
 * @category models
 */
export interface Style {
  readonly enabled: boolean
  readonly bold: (text: string) => string
  readonly dim: (text: string) => string
  readonly red: (text: string) => string
  readonly yellow: (text: string) => string
  readonly green: (text: string) => string
  readonly cyan: (text: string) => string
  /** A stable colour per agent name, so each agent's lines are easy to tell apart. */
  readonly agent: (name: string, text: string) => string
}

export const shouldColor = (stdoutIsTerminal: boolean, noColor: string | undefined): boolean =>
  stdoutIsTerminal && (noColor === undefined || noColor === "")

const sgr = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`

const AGENT_COLOURS = [36, 35, 34, 32, 96, 95, 94, 92]

const hash = (text: string) => {
  let h = 0
  for (const char of text) h = (h * 31 + char.codePointAt(0)!) | 0
  return Math.abs(h)
}

const identity = (text: string) => text

export const make = (enabled: boolean): Style =>
  enabled
    ? {
      enabled,
      bold: sgr(1, 22),
      dim: sgr(2, 22),
      red: sgr(31, 39),
      yellow: sgr(33, 39),
      green: sgr(32, 39),
      cyan: sgr(36, 39),
      agent: (name, text) => sgr(AGENT_COLOURS[hash(name) % AGENT_COLOURS.length]!, 39)(text)
    }
    : { enabled, bold: identity, dim: identity, red: identity, yellow: identity, green: identity, cyan: identity, agent: (_, text) => text }

export const plain: Style = make(false)
