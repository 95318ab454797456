/**
 * The timeline's layout: from a session's events (in sequence order) to lanes, the floor's
 * bands, speeches, tool calls, user turns, passages and markers, each at an x position.
 *
 * A person who takes the floor over (an operator, `Human`) gets a lane of their own, marked
 * where they took over and handed back, with their words as bars; whispers to an agent (and the
 * note of a hand back) are notes in the lane of the agent they are for.
 *
 * The x axis follows event order, not a linear clock: most of a scripted or warm run happens
 * within a millisecond, which a linear scale would draw as one line. Each drawn event takes a
 * step; the step widens with the time elapsed since the previous one (logarithmically), and a
 * label never runs into the next one in its row. The times themselves are written on the axis.
 * Pure: no Effect, no I/O, so the same layout serves `RunResult.timeline()`, the CLI and tests.
 */
import type { SessionEvent } from "../Events.ts"

export type LaneKind = "user" | "agent" | "human" | "session"

export interface Lane {
  readonly name: string
  /** A name first seen as an agent's turns out to be a person's when they take the floor over. */
  kind: LaneKind
  /** Rows below the speech row, one per tool call running at once. */
  toolRows: number
  /** The lane has markers (errors, realtime moves...) and a row for them. */
  markerRow: boolean
}

export type BarKind = "speech" | "tool" | "user" | "user_speaking" | "human"

export interface Bar {
  readonly kind: BarKind
  readonly lane: string
  row: number
  readonly x0: number
  x1: number
  readonly seq: number
  label: string
  title: string
  /** For tools: the output status; for speeches: the source. */
  status: string
  interrupted: boolean
  /** The batch a tool call belongs to (its calls are stacked). */
  readonly batch?: number
}

export interface FloorSpan {
  readonly agent: string
  readonly x0: number
  x1: number
  readonly kind: string
}

export interface Passage {
  readonly from: string | undefined
  readonly to: string
  readonly kind: string
  readonly resumed: boolean
  readonly reason: string | undefined
  readonly x: number
  readonly at: number
  readonly seq: number
  /** Milliseconds from the batch or request that passed the floor to the new holder. */
  readonly passageMs: number | undefined
}

export type MarkerKind = "interrupt" | "error" | "not_applied" | "realtime" | "close" | "take_over" | "hand_back" | "whisper"

export interface Marker {
  readonly kind: MarkerKind
  readonly lane: string
  readonly x: number
  readonly seq: number
  readonly label: string
  readonly title: string
}

export interface Tick {
  readonly x: number
  /** Milliseconds since the first event. */
  readonly ms: number
}

/**
 * The positions of a timeline picture: lanes per agent, the floor band, bars, passages, markers
 * and axis ticks, and its size. Made by `layout`; `Svg` draws it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Layout {
  readonly lanes: ReadonlyArray<Lane>
  readonly floor: ReadonlyArray<FloorSpan>
  readonly bars: ReadonlyArray<Bar>
  readonly passages: ReadonlyArray<Passage>
  readonly markers: ReadonlyArray<Marker>
  readonly ticks: ReadonlyArray<Tick>
  readonly width: number
  readonly startedAt: number
  readonly durationMs: number
}

export const USER_LANE = "user"
export const SESSION_LANE = "session"
export const CHAR_WIDTH = 6.3
const PASSAGE_ROW = "passages"

/** The words on a passage's arrow: its kind, ↺ when the target resumed, and the passage time. */
export const passageLabel = (p: Passage): string =>
  `${p.kind}${p.resumed ? " ↺" : ""}${p.passageMs !== undefined ? ` ${p.passageMs < 1 ? "<1" : Math.round(p.passageMs)} ms` : ""}`
const LABEL_MAX = { speech: 44, tool: 30, user: 40, note: 36 } as const

export const clip = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}
const labelWidth = (label: string) => label.length * CHAR_WIDTH + 14

/** The x step for an event `dt` ms after the previous drawn one. */
const step = (dt: number, base: number) => base + Math.min(120, 34 * Math.log10(1 + Math.max(0, dt) / 5))

type Item = Extract<SessionEvent, { type: "conversation_item_added" }>["item"]

/** The assistant text each speech said: messages of its agent while it was open. */
const speechTexts = (events: ReadonlyArray<SessionEvent>) => {
  const open = new Map<string, string>()
  const texts = new Map<string, Array<string>>()
  for (const event of events) {
    if (event.type === "speech_created") open.set(event.agent, event.speechId)
    else if (event.type === "speech_finished") open.delete(event.agent)
    else if (event.type === "conversation_item_added" && event.item._tag === "Message" && event.item.role === "assistant") {
      const id = open.get(event.item.agent ?? event.agent ?? "")
      if (id) texts.set(id, [...(texts.get(id) ?? []), event.item.text])
    }
  }
  return texts
}

/** The agent holding the floor when the events begin (a run result starts after start-up). */
const firstHolder = (events: ReadonlyArray<SessionEvent>): string | undefined => {
  for (const event of events) {
    if (event.type === "agent_handoff") return event.from
    if ("agent" in event && typeof event.agent === "string") return event.agent
  }
  return undefined
}

const agentOf = (item: Item, agent: string | undefined): string =>
  (item._tag === "AgentHandoff" ? undefined : item.agent) ?? agent ?? SESSION_LANE

/**
 * Lays out `events` (any order; sorted by sequence number here).
 *
 * @since 0.1.0
 * @category utils
 */
export const layout = (input: ReadonlyArray<SessionEvent>): Layout => {
  const events = [...input].sort((a, b) => a.seq - b.seq)
  const startedAt = events[0]?.at ?? 0
  const lanes = new Map<string, Lane>()
  const lane = (name: string, kind: LaneKind = "agent"): Lane => {
    let found = lanes.get(name)
    if (!found) lanes.set(name, found = { name, kind, toolRows: 0, markerRow: false })
    return found
  }
  const bars: Array<Bar> = []
  const floor: Array<FloorSpan> = []
  const passages: Array<Passage> = []
  const markers: Array<Marker> = []
  const ticks: Array<Tick> = []
  const texts = speechTexts(events)
  const openSpeech = new Map<string, Bar>()
  const openCalls = new Map<string, Bar>()
  const busy = new Map<string, number>() // `${lane}/${row}` -> first free x
  let userSpeaking: Bar | undefined
  let x = 40
  let lastAt = startedAt
  let batch = 0
  let passStartedAt: number | undefined

  const hasUser = events.some((e) => e.type === "user_state_changed" ||
    (e.type === "conversation_item_added" && e.item._tag === "Message" && e.item.role === "user"))
  if (hasUser) lane(USER_LANE, "user")
  const holder0 = firstHolder(events)
  if (holder0) {
    lane(holder0)
    floor.push({ agent: holder0, x0: x - 30, x1: x, kind: "held" })
  }

  /** Moves x on for an event at `at`; `base` is the least step. */
  const advance = (at: number, base: number, reserve?: string) => {
    x += step(at - lastAt, base)
    if (reserve !== undefined) x = Math.max(x, busy.get(reserve) ?? 0)
    if (at > lastAt || ticks.length === 0) ticks.push({ x, ms: at - startedAt })
    lastAt = Math.max(lastAt, at)
    return x
  }
  const freeRow = (laneName: string, from: number) => {
    let row = 1
    while ((busy.get(`${laneName}/${row}`) ?? 0) > from) row++
    const l = lane(laneName)
    l.toolRows = Math.max(l.toolRows, row)
    return row
  }
  /** A marker in `laneName`'s marker row, placed after the previous marker's label. */
  const mark = (kind: MarkerKind, laneName: string, at: number, base: number, seq: number, label: string, title: string) => {
    const key = `${laneName}/marker`
    const x = advance(at, base, key)
    const l = lane(laneName, laneName === SESSION_LANE ? "session" : "agent")
    l.markerRow = true
    busy.set(key, x + 16 + label.length * CHAR_WIDTH * 0.85)
    markers.push({ kind, lane: laneName, x, seq, label, title })
  }
  /** A person's lane (made one if the name was first seen elsewhere). */
  const human = (name: string) => {
    const l = lane(name, "human")
    l.kind = "human"
    return l
  }
  const close = (bar: Bar, at: number) => {
    bar.x1 = Math.max(at, bar.x0 + 4)
    busy.set(`${bar.lane}/${bar.row}`, Math.max(bar.x1, bar.x0 + labelWidth(bar.label)) + 6)
  }

  for (const event of events) {
    switch (event.type) {
      case "speech_created": {
        const key = `${event.agent}/0`
        lane(event.agent)
        const at = advance(event.at, 16, key)
        const said = (texts.get(event.speechId) ?? []).join(" ")
        const bar: Bar = {
          kind: "speech", lane: event.agent, row: 0, x0: at, x1: at, seq: event.seq,
          label: said ? `“${clip(said, LABEL_MAX.speech)}”` : "",
          title: `${event.agent} · ${event.source} · ${event.speechId}${said ? `\n${said}` : ""}`,
          status: event.source, interrupted: false
        }
        busy.set(key, Number.POSITIVE_INFINITY)
        openSpeech.set(event.agent, bar)
        bars.push(bar)
        break
      }
      case "speech_finished": {
        const bar = openSpeech.get(event.agent)
        const at = advance(event.at, 4)
        if (!bar) break
        openSpeech.delete(event.agent)
        bar.interrupted = event.interrupted
        close(bar, at)
        if (event.interrupted) {
          // The cut is drawn at the end of the bar (drawn wide enough for its words).
          const end = Math.max(at, bar.x0 + labelWidth(bar.label) + 3)
          markers.push({ kind: "interrupt", lane: event.agent, x: end, seq: event.seq, label: "interrupted", title: `${event.agent}'s speech ${event.speechId} was interrupted` })
        }
        break
      }
      case "conversation_item_added": {
        const item = event.item
        if (item._tag === "Message" && item.role === "assistant" && item.agent !== undefined && lanes.get(item.agent)?.kind === "human") {
          // A person's words (typed, or their voice transcribed): a bar in their lane.
          const key = `${item.agent}/0`
          const at = advance(event.at, 18, key)
          const bar: Bar = {
            kind: "human", lane: item.agent, row: 0, x0: at, x1: at, seq: event.seq,
            label: `“${clip(item.text, LABEL_MAX.speech)}”`, title: `${item.agent} (a person)\n${item.text}`,
            status: "said", interrupted: false
          }
          close(bar, at + 4)
          bars.push(bar)
        } else if (item._tag === "Message" && item.role === "user") {
          const at = advance(event.at, 18, `${USER_LANE}/0`)
          const bar: Bar = {
            kind: "user", lane: USER_LANE, row: 0, x0: at, x1: at, seq: event.seq,
            label: `“${clip(item.text, LABEL_MAX.user)}”`, title: `user → ${item.agent ?? "?"}\n${item.text}`,
            status: "said", interrupted: false
          }
          close(bar, at + 4)
          bars.push(bar)
        } else if (item._tag === "FunctionCall") {
          const laneName = agentOf(item, event.agent)
          const at = advance(event.at, 6)
          const previous = [...openCalls.values()].some((b) => b.lane === laneName)
          if (!previous) batch++
          const row = freeRow(laneName, at)
          const bar: Bar = {
            kind: "tool", lane: laneName, row, x0: at, x1: at, seq: event.seq,
            label: clip(item.name, LABEL_MAX.tool), title: `${item.name}(${clip(item.arguments, 200)})`,
            status: "running", interrupted: false, batch
          }
          busy.set(`${laneName}/${row}`, Number.POSITIVE_INFINITY)
          openCalls.set(item.callId, bar)
          bars.push(bar)
        } else if (item._tag === "FunctionCallOutput") {
          const bar = openCalls.get(item.callId)
          const at = advance(event.at, 3)
          if (!bar || item.status === "progress") {
            if (bar) bar.title += `\nprogress: ${clip(item.output, 120)}`
            break
          }
          openCalls.delete(item.callId)
          bar.status = item.status
          bar.interrupted = item.status === "interrupted" || item.status === "cancelled"
          bar.title += `\n→ [${item.status}] ${clip(item.output, 200)}`
          close(bar, at)
        }
        break
      }
      case "function_tools_executed":
        if (event.hasHandoff) passStartedAt = event.at
        break
      case "agent_handoff": {
        if (event.kind === "take_over") human(event.to)
        else if (event.kind === "hand_back" && event.from !== undefined) human(event.from)
        lane(event.to)
        const at = advance(event.at, 26, PASSAGE_ROW)
        const current = floor[floor.length - 1]
        if (current) current.x1 = at
        floor.push({ agent: event.to, x0: at, x1: at, kind: event.kind })
        passages.push({
          from: event.from, to: event.to, kind: event.kind, resumed: event.resumed, reason: event.reason,
          x: at, at: event.at, seq: event.seq, passageMs: passStartedAt === undefined ? undefined : event.at - passStartedAt
        })
        busy.set(PASSAGE_ROW, at + passageLabel(passages[passages.length - 1]!).length * CHAR_WIDTH + 24)
        passStartedAt = undefined
        // The person's lane marks where they took the floor and where they gave it back.
        if (event.kind === "take_over") {
          mark("take_over", event.to, event.at, 0, event.seq, "took over", `${event.to} took the floor over from ${event.from ?? "?"}${event.reason ? `: ${event.reason}` : ""}`)
        } else if (event.kind === "hand_back" && event.from !== undefined) {
          mark("hand_back", event.from, event.at, 0, event.seq, `back to ${event.to}`, `${event.from} handed the floor back to ${event.to}${event.reason ? `: ${event.reason}` : ""}`)
        }
        break
      }
      case "whisper": {
        const what = event.note ? "note" : "whisper"
        mark("whisper", event.agent, event.at, 14, event.seq, `${what}: ${clip(event.text, LABEL_MAX.note)}`, `${what} for ${event.agent} (only the agent sees it)\n${event.text}`)
        // The next passage's arrow comes after the note's words, not through them.
        busy.set(PASSAGE_ROW, Math.max(busy.get(PASSAGE_ROW) ?? 0, busy.get(`${event.agent}/marker`) ?? 0))
        break
      }
      case "handoff_not_applied": {
        mark("not_applied", event.agent, event.at, 14, event.seq, `→ ${event.to} not applied`, `handoff to ${event.to} not applied: ${event.reason}`)
        break
      }
      case "error": {
        mark("error", event.agent ?? SESSION_LANE, event.at, 14, event.seq, `${event.source} error`, `${event.source} error${event.recoverable ? "" : " (fatal)"}: ${event.message}`)
        break
      }
      case "user_state_changed": {
        const at = advance(event.at, 8)
        if (event.state === "speaking" && !userSpeaking) {
          userSpeaking = { kind: "user_speaking", lane: USER_LANE, row: 1, x0: at, x1: at, seq: event.seq, label: "", title: "the user is speaking", status: "speaking", interrupted: false }
          lane(USER_LANE, "user").toolRows = 1
          bars.push(userSpeaking)
        } else if (event.state === "listening" && userSpeaking) {
          userSpeaking.x1 = at
          userSpeaking = undefined
        }
        break
      }
      case "close": {
        mark("close", floor[floor.length - 1]?.agent ?? SESSION_LANE, event.at, 12, event.seq, "closed", `session closed: ${event.reason}`)
        break
      }
      case "realtime_connection": {
        mark("realtime", event.agent, event.at, 14, event.seq, event.action.replace("_", " "), `realtime connection ${event.connectionId} ${event.action}`)
        break
      }
    }
  }
  const end = x + 30
  for (const bar of [...openSpeech.values(), ...openCalls.values()]) bar.x1 = end
  if (userSpeaking) userSpeaking.x1 = end
  const width = Math.max(end, ...bars.map((b) => Math.max(b.x1, b.x0 + labelWidth(b.label)))) + 20
  const last = floor[floor.length - 1]
  if (last) last.x1 = width - 20
  return {
    lanes: [...lanes.values()], floor, bars, passages, markers, ticks, width, startedAt,
    durationMs: (events[events.length - 1]?.at ?? startedAt) - startedAt
  }
}
