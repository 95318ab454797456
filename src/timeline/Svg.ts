/**
 * The timeline's drawing: a `Layout` as one SVG document (a string; no browser, no DOM).
 *
 * One lane per agent (the user on top; a person who took the floor over in a lane of their own,
 * drawn apart, with the take-over and hand-back marked and their words as bars), the floor as a tinted band in the lane of the agent
 * holding it, an arrow where it passes, speeches and tool calls as bars (parallel calls
 * stacked), markers for interruptions, errors, refused handoffs and realtime connection moves,
 * and the elapsed time on the axis. Every element carries a class and `data-*` attributes
 * (agent, kind, seq) so tests can read the picture's structure back without comparing bytes.
 */
import { type Bar, CHAR_WIDTH, type Lane, type Layout, type Marker, type Passage, passageLabel, USER_LANE } from "./Layout.ts"

const LEFT = 130
const TOP = 78
const SPEECH_ROW = 20
const TOOL_ROW = 17
const FONT = "font-family=\"ui-sans-serif, system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif\""
/** A person's lane (an operator who took over): one colour for people, none of the agents'. */
const HUMAN = "#b45309"
const PALETTE = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#0891b2", "#db2777", "#4f46e5", "#65a30d"]

export const escape = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const attrs = (fields: Record<string, string | number | undefined>) =>
  Object.entries(fields).flatMap(([k, v]) => (v === undefined ? [] : [`${k}="${typeof v === "number" ? round(v) : escape(v)}"`])).join(" ")
const round = (n: number) => String(Math.round(n * 10) / 10)

export const formatMs = (ms: number): string =>
  ms < 1 ? "0 ms" : ms < 1000 ? `${Math.round(ms)} ms` : ms < 60_000 ? `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`

interface Geometry {
  readonly y: number
  readonly height: number
  readonly color: string
}

const MARKER_ROW = 16

const laneHeight = (lane: Lane) =>
  (lane.kind === "user" ? 34 + lane.toolRows * 10 : 14 + SPEECH_ROW + lane.toolRows * TOOL_ROW + (lane.toolRows > 0 ? 6 : 0)) +
  (lane.markerRow ? MARKER_ROW : 0)

const geometry = (lanes: ReadonlyArray<Lane>) => {
  const map = new Map<string, Geometry>()
  let y = TOP
  let agents = 0
  for (const lane of lanes) {
    const height = laneHeight(lane)
    map.set(lane.name, { y, height, color: lane.kind === "agent" ? PALETTE[agents++ % PALETTE.length]! : lane.kind === "human" ? HUMAN : "#64748b" })
    y += height
  }
  return { map, bottom: y }
}

const rowY = (g: Geometry, row: number) => (row === 0 ? g.y + 7 : g.y + 7 + SPEECH_ROW + 4 + (row - 1) * TOOL_ROW)

const laneRows = (lanes: ReadonlyArray<Lane>, geo: Map<string, Geometry>, width: number) =>
  lanes.map((lane, i) => {
    const g = geo.get(lane.name)!
    return `<g class="lane" ${attrs({ "data-lane": lane.name, "data-kind": lane.kind, "data-index": i })}>` +
      `<rect x="0" y="${g.y}" width="${width}" height="${g.height}" fill="${i % 2 ? "#f8fafc" : "#ffffff"}"/>` +
      `<line x1="0" x2="${width}" y1="${g.y + g.height}" y2="${g.y + g.height}" stroke="#e2e8f0"/>` +
      `<rect x="8" y="${g.y + g.height / 2 - 9}" width="10" height="18" rx="2" fill="${g.color}"/>` +
      `<text x="24" y="${g.y + g.height / 2 + 4}" font-size="13" font-weight="600" fill="#0f172a">${escape(lane.name)}</text>` +
      (lane.kind === "human" ? `<text x="24" y="${g.y + g.height / 2 + 16}" font-size="9.5" fill="${HUMAN}">person</text>` : "") + `</g>`
  }).join("\n")

const floorBands = (layout: Layout, geo: Map<string, Geometry>) =>
  layout.floor.map((span, i) => {
    const g = geo.get(span.agent)
    if (!g) return ""
    return `<g class="floor" ${attrs({ "data-agent": span.agent, "data-index": i, "data-kind": span.kind, "data-x0": span.x0, "data-x1": span.x1 })}>` +
      `<rect x="${round(LEFT + span.x0)}" y="${g.y + 1}" width="${round(Math.max(2, span.x1 - span.x0))}" height="${g.height - 2}" fill="${g.color}" fill-opacity="0.13"/>` +
      `<rect x="${round(LEFT + span.x0)}" y="${g.y + 1}" width="${round(Math.max(2, span.x1 - span.x0))}" height="3" fill="${g.color}"/></g>`
  }).join("\n")

const barStyle = (bar: Bar, g: Geometry) => {
  switch (bar.kind) {
    case "speech":
      return { fill: g.color, opacity: 0.22, stroke: bar.interrupted ? "#dc2626" : g.color, dash: bar.interrupted ? "4 2" : undefined }
    case "user":
      return { fill: "#e2e8f0", opacity: 1, stroke: "#475569", dash: undefined }
    case "user_speaking":
      return { fill: "#94a3b8", opacity: 0.6, stroke: "none", dash: undefined }
    case "human":
      return { fill: HUMAN, opacity: 0.16, stroke: HUMAN, dash: undefined }
    case "tool": {
      const stroke = bar.status === "error" ? "#dc2626" : bar.status === "handoff" ? "#0f172a" : "#64748b"
      const fill = bar.status === "error" ? "#fee2e2" : bar.status === "handoff" ? "#fde68a" : "#e5e7eb"
      return { fill, opacity: 1, stroke, dash: bar.interrupted ? "3 2" : undefined }
    }
  }
}

const barElement = (bar: Bar, geo: Map<string, Geometry>) => {
  const g = geo.get(bar.lane)
  if (!g) return ""
  const user = bar.kind === "user" || bar.kind === "user_speaking"
  const y = user ? g.y + (bar.kind === "user" ? 7 : 30) : rowY(g, bar.row)
  const h = bar.kind === "user_speaking" ? 6 : bar.kind === "tool" ? TOOL_ROW - 3 : SPEECH_ROW
  const style = barStyle(bar, g)
  const labelW = bar.label.length * CHAR_WIDTH + 10
  // A speech or user turn is drawn wide enough for its words (x is event order, not a clock);
  // a tool call keeps its true extent and writes its name after it when it does not fit.
  const w = Math.max(4, bar.x1 - bar.x0, bar.kind === "tool" ? 0 : labelW)
  const inside = bar.kind !== "tool" || labelW <= w
  const textX = inside ? bar.x0 + 5 : bar.x0 + w + 3
  const text = bar.label
    ? `<text x="${round(LEFT + textX)}" y="${round(y + h / 2 + 4)}" font-size="${bar.kind === "tool" ? 10.5 : 11.5}" fill="#0f172a">${escape(bar.label)}</text>`
    : ""
  return `<g class="bar ${bar.kind}" ${attrs({ "data-lane": bar.lane, "data-row": bar.row, "data-seq": bar.seq, "data-x0": bar.x0, "data-x1": bar.x1, "data-status": bar.status, "data-batch": bar.batch, "data-interrupted": bar.interrupted ? "true" : undefined })}>` +
    `<title>${escape(bar.title)}</title>` +
    `<rect x="${round(LEFT + bar.x0)}" y="${round(y)}" width="${round(w)}" height="${h}" rx="${bar.kind === "tool" ? 3 : 5}" fill="${style.fill}" fill-opacity="${style.opacity}" stroke="${style.stroke}"${style.dash ? ` stroke-dasharray="${style.dash}"` : ""}/>` +
    `${text}</g>`
}

const passageElement = (p: Passage, geo: Map<string, Geometry>) => {
  const to = geo.get(p.to)
  if (!to) return ""
  const from = p.from ? geo.get(p.from) : undefined
  const x = round(LEFT + p.x)
  const yTo = to.y + 8
  const label = passageLabel(p)
  const title = `${p.from ?? "(start)"} → ${p.to} · ${p.kind}${p.resumed ? ", resumed" : ""}${p.reason ? ` · ${p.reason}` : ""}`
  const data = attrs({ "data-from": p.from, "data-to": p.to, "data-kind": p.kind, "data-resumed": String(p.resumed), "data-seq": p.seq, "data-x": p.x })
  if (!from || from === to) {
    return `<g class="passage" ${data}><title>${escape(title)}</title>` +
      `<path d="M${x} ${yTo - 6} l-5 -8 h10 z" fill="#0f172a"/></g>`
  }
  const down = to.y > from.y
  const y0 = down ? from.y + from.height - 4 : from.y + 4
  const y1 = down ? to.y + 4 : to.y + to.height - 4
  const mid = (y0 + y1) / 2
  const pill = label.length * 6 + 12
  return `<g class="passage" ${data}><title>${escape(title)}</title>` +
    `<line x1="${x}" y1="${y0}" x2="${x}" y2="${y1}" stroke="#0f172a" stroke-width="2" marker-end="url(#arrow)"/>` +
    `<rect x="${round(LEFT + p.x + 5)}" y="${round(mid - 8)}" width="${round(pill)}" height="16" rx="8" fill="#0f172a"/>` +
    `<text x="${round(LEFT + p.x + 10)}" y="${round(mid + 4)}" font-size="10" fill="#ffffff">${escape(label)}</text></g>`
}

const MARK: Record<Marker["kind"], { readonly glyph: string; readonly color: string }> = {
  interrupt: { glyph: "✕", color: "#dc2626" },
  error: { glyph: "▲", color: "#dc2626" },
  not_applied: { glyph: "⊘", color: "#ea580c" },
  realtime: { glyph: "◆", color: "#7c3aed" },
  close: { glyph: "■", color: "#0f172a" },
  take_over: { glyph: "▼", color: HUMAN },
  hand_back: { glyph: "▲", color: HUMAN },
  whisper: { glyph: "✎", color: "#0369a1" }
}

const markerElement = (m: Marker, geo: Map<string, Geometry>) => {
  const g = geo.get(m.lane)
  if (!g) return ""
  const { color, glyph } = MARK[m.kind]
  const y = m.kind === "interrupt" ? g.y + 7 + SPEECH_ROW / 2 + 5 : g.y + g.height - 5
  return `<g class="marker ${m.kind}" ${attrs({ "data-lane": m.lane, "data-seq": m.seq, "data-x": m.x })}><title>${escape(m.title)}</title>` +
    `<text x="${round(LEFT + m.x - 5)}" y="${round(y)}" font-size="13" font-weight="700" fill="${color}">${glyph}</text>` +
    (m.kind === "interrupt" ? "" : `<text x="${round(LEFT + m.x + 9)}" y="${round(y - 1)}" font-size="10" fill="${color}">${escape(m.label)}</text>`) + `</g>`
}

const axis = (layout: Layout, width: number, bottom: number) => {
  let lastLabel = Number.NEGATIVE_INFINITY
  let lastText = ""
  const ticks = layout.ticks.map((t) => {
    const x = round(LEFT + t.x)
    const labelled = t.x - lastLabel >= 62 && formatMs(t.ms) !== lastText
    if (labelled) {
      lastLabel = t.x
      lastText = formatMs(t.ms)
    }
    return `<g class="tick" data-ms="${round(t.ms)}"><line x1="${x}" x2="${x}" y1="${TOP - 8}" y2="${labelled ? bottom : TOP - 2}" stroke="${labelled ? "#e2e8f0" : "#94a3b8"}"${labelled ? " stroke-dasharray=\"2 3\"" : ""}/>` +
      (labelled ? `<text x="${x}" y="${TOP - 13}" font-size="10" fill="#475569" text-anchor="middle">${formatMs(t.ms)}</text>` : "") + `</g>`
  })
  return `<g class="axis"><line x1="${LEFT}" x2="${width}" y1="${TOP - 8}" y2="${TOP - 8}" stroke="#94a3b8"/>${ticks.join("")}</g>`
}

const LEGEND: ReadonlyArray<[string, string]> = [
  ["<rect width=\"22\" height=\"12\" fill=\"#2563eb\" fill-opacity=\"0.13\"/><rect width=\"22\" height=\"3\" fill=\"#2563eb\"/>", "floor (who holds it)"],
  ["<rect width=\"22\" height=\"12\" rx=\"4\" fill=\"#2563eb\" fill-opacity=\"0.22\" stroke=\"#2563eb\"/>", "speech"],
  ["<rect width=\"22\" height=\"12\" rx=\"3\" fill=\"#e5e7eb\" stroke=\"#64748b\"/>", "tool call"],
  ["<rect width=\"22\" height=\"12\" rx=\"3\" fill=\"#fde68a\" stroke=\"#0f172a\"/>", "handoff tool"],
  ["<rect width=\"10\" height=\"12\" rx=\"6\" fill=\"#0f172a\"/>", "floor passes"],
  ["<text y=\"11\" font-size=\"13\" font-weight=\"700\" fill=\"#dc2626\">✕</text>", "interrupted"],
  ["<text y=\"11\" font-size=\"13\" font-weight=\"700\" fill=\"#7c3aed\">◆</text>", "realtime connection"],
  [`<rect width="22" height="12" rx="4" fill="${HUMAN}" fill-opacity="0.16" stroke="${HUMAN}"/>`, "a person (took over)"],
  ["<text y=\"11\" font-size=\"13\" font-weight=\"700\" fill=\"#0369a1\">✎</text>", "whisper / note"]
]
const LEGEND_WIDTH = LEGEND.reduce((sum, [, label]) => sum + 40 + label.length * 6.2, 20)

const legend = (y: number) => {
  let x = LEFT
  const parts = LEGEND.map(([swatch, label]) => {
    const part = `<g transform="translate(${round(x)} ${y})">${swatch}<text x="28" y="10" font-size="11" fill="#334155">${label}</text></g>`
    x += 40 + label.length * 6.2
    return part
  })
  return `<g class="legend">${parts.join("")}<text x="${LEFT}" y="${y + 30}" font-size="10" fill="#64748b">x follows event order; gaps widen with elapsed time (times on the axis). Hover an element for details.</text></g>`
}

export interface SvgOptions {
  readonly title?: string
}

/** The SVG document for `layout`. */
export const render = (layout: Layout, options: SvgOptions = {}): string => {
  const { map: geo, bottom } = geometry(layout.lanes)
  const width = Math.max(LEFT + LEGEND_WIDTH, LEFT + layout.width)
  const height = bottom + 62
  const agents = layout.lanes.filter((l) => l.kind === "agent").length
  const title = options.title ?? "baton timeline"
  const people = layout.lanes.filter((l) => l.kind === "human").length
  const summary = `${agents} agent${agents === 1 ? "" : "s"}${people > 0 ? ` · ${people} ${people === 1 ? "person" : "people"}` : ""} · ${layout.passages.filter((p) => p.from !== undefined).length} passages of the floor · ${formatMs(layout.durationMs)}`
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${round(width)}" height="${round(height)}" viewBox="0 0 ${round(width)} ${round(height)}" ${FONT}>`,
    `<defs><marker id="arrow" viewBox="0 0 10 10" refX="8" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" fill="#0f172a"/></marker></defs>`,
    `<rect class="background" width="100%" height="100%" fill="#ffffff"/>`,
    `<text class="title" x="12" y="24" font-size="16" font-weight="700" fill="#0f172a">${escape(title)}</text>`,
    `<text class="summary" x="12" y="42" font-size="11" fill="#475569">${escape(summary)}</text>`,
    laneRows(layout.lanes, geo, width),
    floorBands(layout, geo),
    axis(layout, width, bottom),
    layout.bars.filter((b) => b.lane === USER_LANE || b.kind !== "user").map((b) => barElement(b, geo)).join("\n"),
    layout.passages.map((p) => passageElement(p, geo)).join("\n"),
    layout.markers.map((m) => markerElement(m, geo)).join("\n"),
    legend(bottom + 16),
    `</svg>`
  ].join("\n")
}
