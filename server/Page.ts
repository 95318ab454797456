/**
 * The playground page at `/`: plain HTML and one script, no build. It opens `/ws`, sends text,
 * captures the microphone through an AudioWorklet as PCM16 (push-to-talk or open mic), plays the
 * agent's audio gap-free and drops it at once on `clear`, and shows the transcript, who holds the
 * floor and every event as it arrives (a live handoff timeline). When its socket drops (or the
 * service restarts and says `reconnect`) it shows "reconnecting…" and resumes the same session
 * with its latest resume token, a few tries with backoff; the `history` it gets back is merged
 * into the transcript by item id (what was shown stays, what was said meanwhile is added).
 */
import { createHash } from "node:crypto"
import { microphoneScript } from "./MicrophoneScript.ts"

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

export const page = (options: { readonly model: string; readonly phrases?: ReadonlyArray<string> | undefined }): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>baton playground</title>
<link rel="icon" href="/favicon.ico" type="image/svg+xml">
<style>
  body { font: 15px/1.4 system-ui, sans-serif; margin: 0; display: grid; grid-template-columns: 1fr 360px; height: 100vh; }
  main { display: flex; flex-direction: column; padding: 12px 16px; min-height: 0; }
  aside { border-left: 1px solid #ddd; padding: 12px; overflow: auto; background: #fafafa; font-size: 13px; }
  header { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; }
  #floor { font-weight: 600; padding: 2px 8px; border-radius: 10px; background: #e8f0fe; }
  #speaking { color: #1a5fd6; font-weight: 600; visibility: hidden; } #speaking.on { visibility: visible; }
  #startAudio { font-weight: 600; background: #fff4d6; border: 1px solid #e0b100; border-radius: 6px; padding: 4px 10px; cursor: pointer; }
  #level { width: 80px; height: 10px; }
  #transcript { flex: 1; overflow: auto; margin: 12px 0; }
  .msg { margin: 6px 0; } .msg b { margin-right: 6px; } .user b { color: #555; } .agent b { color: #1a5fd6; }
  .agent.talking .words::after { content: " …"; color: #1a5fd6; }
  .cut-mark { margin-left: 6px; font-size: 12px; color: #b3261e; border: 1px solid #e6a5a0; border-radius: 8px; padding: 0 6px; }
  .interim { color: #777; font-style: italic; }
  .handoff { color: #7a3fb8; font-style: italic; margin: 6px 0; }
  #phrases { margin: 4px 0 0; padding-left: 20px; } #phrases:empty { display: none; }
  form { display: flex; gap: 8px; } input[type=text] { flex: 1; padding: 6px; }
  #timelineBar { display: flex; gap: 8px; align-items: center; margin: 4px 0; }
  #timeline { overflow: auto; max-height: 45vh; margin-bottom: 12px; } #timeline svg { height: auto; max-width: none; }
  #timeline.fit svg { width: 100%; }
  #events div { border-bottom: 1px solid #eee; padding: 2px 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  .muted { color: #777; }
</style>
</head>
<body>
<main>
  <header>
    <strong>baton</strong>
    <span>floor: <span id="floor">–</span></span>
    <span id="speaking">speaking…</span>
    <span id="status" class="muted">connecting…</span>
    <label><input type="checkbox" id="openMic"> open mic</label>
    <button id="talk" type="button">hold to talk</button>
    <meter id="level" min="0" max="1" value="0" title="microphone level" hidden></meter>
    <button id="startAudio" type="button" hidden>▶ Click to start audio</button>
  </header>
  <div class="muted" id="model">${escapeHtml(options.model)}</div>
  <ul class="muted" id="phrases">${(options.phrases ?? []).map((phrase) => `<li>${escapeHtml(phrase)}</li>`).join("")}</ul>
  <div id="transcript"></div>
  <form id="send"><input type="text" id="text" placeholder="Type to the agent holding the floor" autocomplete="off"><button>Send</button></form>
</main>
<aside><strong>Handoff timeline</strong>
<div id="timelineBar"><label><input type="checkbox" id="fit"> fit width</label><button id="openTimeline" type="button" disabled>open full picture</button></div>
<div id="timeline" class="muted">after the first turn</div><strong>Events</strong><div id="events"></div></aside>
<script>
const $ = (id) => document.getElementById(id)
// lines: the agent's words by speech (text as it came, shown as it is heard)
const state = { audioIn: "none", lines: {}, all: [], voicing: null, playAt: 0, sources: [], outRate: 24000, ctx: null, mic: null,
  sending: false, holding: false, heard: 0, played: 0, audioOn: false, dropped: 0, level: 0, follow: true, svg: "", interim: null,
  sessionId: null, resumeToken: null, ended: false, tries: 0, resumes: 0, seen: new Set(), outbox: [] }
window.baton = state
const line = (cls, who, text) => {
  const div = document.createElement("div"); div.className = "msg " + cls
  const b = document.createElement("b"); b.textContent = who; div.append(b, document.createTextNode(text))
  $("transcript").append(div); $("transcript").scrollTop = 1e9; return div
}
const logEvent = (e) => {
  const div = document.createElement("div")
  div.textContent = (e.type || "?") + (e.agent ? " · " + e.agent : "") + (e.from ? " · " + e.from + " → " + e.to : "")
  div.title = JSON.stringify(e); $("events").prepend(div)
}
const wsUrl = (resume) => { const url = new URL("ws", location.href); url.protocol = location.protocol === "https:" ? "wss:" : "ws:"
  const token = new URLSearchParams(location.search).get("token")
  if (resume) url.searchParams.set("resume", resume); else if (token) url.searchParams.set("token", token)
  return url }
let ws = null
// Sound starts on the first click or key (the browser's autoplay policy): no AudioContext before,
// so nothing is refused and nothing is logged; audio that comes before is not queued.
const startAudio = (ev) => {
  if (state.audioOn) return
  state.audioOn = true; state.ctx ??= new AudioContext(); state.ctx.resume()
  // hidden once the click that started it is over (not under the pointer that is pressing it)
  setTimeout(() => { $("startAudio").hidden = true }, ev?.target === $("startAudio") ? 300 : 0)
}
addEventListener("pointerdown", startAudio, true); addEventListener("keydown", startAudio, true)
const now = () => (state.ctx ? state.ctx.currentTime : 0)
const play = (buffer) => {
  if (!state.audioOn) { state.dropped += buffer.byteLength / 2; return }
  const ctx = state.ctx; const pcm = new Int16Array(buffer); const f = new Float32Array(pcm.length)
  for (let i = 0; i < pcm.length; i++) f[i] = pcm[i] / 32768
  const b = ctx.createBuffer(1, f.length, state.outRate); b.copyToChannel(f, 0)
  const src = ctx.createBufferSource(); src.buffer = b; src.connect(ctx.destination)
  state.playAt = Math.max(state.playAt, ctx.currentTime + 0.02); src.start(state.playAt)
  // the audio of the words shown last: they are revealed as it plays
  const v = state.voicing; if (v && !v.cut) { if (v.audioStart === null) v.audioStart = state.playAt; v.audioEnd = state.playAt + b.duration }
  state.playAt += b.duration
  state.played += pcm.length; state.sources.push(src); src.onended = () => { state.sources = state.sources.filter((s) => s !== src) }
}
const clearAudio = () => { for (const s of state.sources) { try { s.stop() } catch {} } state.sources = []; state.playAt = 0 }
// An agent's words of one speech step: shown as their audio plays (at once without audio).
const agentLine = (e) => {
  let l = state.lines[e.speechId]
  if (!l) {
    const div = line("agent", e.agent + ":", ""); div.dataset.agent = e.agent; div.dataset.speech = e.speechId
    const words = document.createElement("span"); words.className = "words"; div.append(words)
    l = state.lines[e.speechId] = { div, words, agent: e.agent, text: "", said: "", shown: 0, at: performance.now(), audioStart: null, audioEnd: null, finished: false, cut: false }
    state.all.push(l)
  }
  return l
}
const CHARS_PER_SECOND = 14
const reveal = (l) => {
  if (l.cut || l.shown >= l.text.length && l.finished) return l.shown
  let n = l.text.length
  if (l.audioStart !== null) {
    // the speech's audio so far, or (while more may come) what its words take to say
    const scheduled = l.audioEnd - l.audioStart
    const span = l.finished ? scheduled : Math.max(scheduled, l.text.length / CHARS_PER_SECOND)
    const part = span > 0 ? Math.min(1, Math.max(0, (now() - l.audioStart) / span)) : 1
    n = Math.round(l.text.length * part)
    // whole words
    while (n > 0 && n < l.text.length && /\\S/.test(l.text[n])) n++
  } else if (state.audioOn && state.audioIn !== "none" && !l.finished && performance.now() - l.at < 1500) n = 0
  return Math.max(l.shown, n)
}
const markCut = (l, heard) => {
  if (l.cut) return
  if (typeof heard === "string") { l.text = heard; l.shown = heard.length }
  l.cut = true; l.div.classList.add("cut"); l.div.classList.remove("talking")
  const mark = document.createElement("span"); mark.className = "cut-mark"; mark.textContent = "cut off"; mark.title = "interrupted: only the words shown were heard"
  l.div.append(mark); l.words.textContent = l.text.slice(0, l.shown)
}
// The user typed over the agent: what it was saying stops where it was (the server cuts its own
// side of it; a realtime model's reply may have ended there already while it still plays here).
const cutTalking = () => {
  const talking = state.all.filter((l) => !l.cut && !l.done && (l.shown < l.text.length || (l.audioEnd !== null && now() < l.audioEnd)))
  if (talking.length === 0) return
  clearAudio(); for (const l of talking) markCut(l)
}
const render = () => {
  let talking = false
  for (const l of state.all) {
    if (l.cut || l.done) continue
    const n = reveal(l)
    if (n !== l.shown) { l.shown = n; l.words.textContent = l.text.slice(0, n); $("transcript").scrollTop = 1e9 }
    const playing = l.audioEnd !== null && now() < l.audioEnd
    const more = l.shown < l.text.length || playing || !l.finished
    l.div.classList.toggle("talking", more)
    if (more) talking = true; else l.done = true
  }
  $("speaking").classList.toggle("on", talking)
  state.talking = talking
}
setInterval(render, 50)
const userLine = (text) => { if (state.interim) { state.interim.remove(); state.interim = null } line("user", "you:", text) }
const interim = (text, final) => {
  if (final) { if (state.interim) { state.interim.remove(); state.interim = null } return }
  if (!state.interim) state.interim = line("user interim", "you (hearing…):", "")
  state.interim.lastChild.textContent = text; $("transcript").scrollTop = 1e9
}
const askTimeline = () => { clearTimeout(state.redraw)
  state.redraw = setTimeout(() => ws.readyState === 1 && ws.send(JSON.stringify({ type: "timeline" })), 150) }
const handoffLine = (from, to, kind) => { const d = document.createElement("div"); d.className = "handoff"
  d.textContent = "floor: " + (from || "–") + " → " + to + (kind ? " (" + kind + ")" : ""); $("transcript").append(d) }
// The conversation so far, after a resume: items already shown (by id) stay as they are; an agent's
// words cut off here by the drop are completed; what was said while away is added.
const mergeHistory = (items) => {
  for (const item of items) {
    if (state.seen.has(item.id)) continue
    state.seen.add(item.id)
    if (item._tag === "AgentHandoff") { if (item.kind !== "start") handoffLine(item.from, item.to, item.kind) }
    else if (item._tag === "Message" && item.role === "user") userLine(item.text)
    else if (item._tag === "Message" && item.role === "assistant") {
      const l = gapLine(item.agent) ?? agentLine({ agent: item.agent, speechId: item.id })
      completeLine(l, item); l.finished = true; l.shown = item.text.length; l.words.textContent = item.text
      if (item.interrupted) markCut(l, item.text)
    }
  }
}
// A line whose words were streaming when the socket dropped missed some of them: the item the
// session recorded for it (live or in the history) has them all.
const gapLine = (agent) => state.all.find((l) => l.gap && l.agent === agent && !l.item)
const completeLine = (l, item) => { l.item = item.id; l.gap = false; l.text = l.said = item.text }
const connect = () => {
  ws = new WebSocket(wsUrl(state.resumeToken)); ws.binaryType = "arraybuffer"
  const socket = ws
  socket.onmessage = (m) => { if (socket === ws) onFrame(m) }
  socket.onclose = (c) => { if (socket === ws) onClose(c) }
}
// Unexpected closes are retried with the latest token: 0.25 s, 0.5 s, 1 s, 2 s, 4 s, then given up.
const BACKOFF = [250, 500, 1000, 2000, 4000]
const onClose = (c) => {
  if (state.ended || !state.resumeToken || c.code === 1000 || (c.code >= 4400 && c.code < 4500) || state.tries >= BACKOFF.length) {
    $("status").textContent = c.code >= 4400 && c.code < 4500 ? "session ended: " + c.reason : state.ended ? $("status").textContent : "disconnected"
    return
  }
  $("status").textContent = "reconnecting…"; clearAudio()
  for (const l of state.all) if (!l.finished && !l.cut) l.gap = true
  setTimeout(connect, state.moving ? 0 : BACKOFF[state.tries]); state.tries++; state.moving = false
}
// The message handler is set before anything awaits the microphone, so no frame is missed.
const onFrame = (m) => {
  if (typeof m.data !== "string") return play(m.data)
  const e = JSON.parse(m.data)
  if (e.type !== "timeline" && e.type !== "agent_text" && e.type !== "resume_token") logEvent(e)
  switch (e.type) {
    case "ready": state.audioIn = e.audio; $("floor").textContent = e.agent || "–"
      state.sessionId = e.sessionId; state.resumeToken = e.resumeToken; state.tries = 0; if (e.resumed) state.resumes++
      $("status").textContent = (e.audio === "none" ? "connected · text only (no realtime model or voice pipeline on this server)" : "connected · voice on") + (e.resumed ? " · resumed" : "")
      $("talk").disabled = $("openMic").disabled = e.audio === "none"
      $("startAudio").hidden = e.audio === "none" || state.audioOn
      if (state.mic) ws.send(JSON.stringify({ type: "audio_format", sampleRate: state.ctx.sampleRate }))
      for (const frame of state.outbox.splice(0)) ws.send(frame); break
    case "history": mergeHistory(e.items); break
    case "resume_token": state.resumeToken = e.resumeToken; break
    case "reconnect": state.resumeToken = e.resumeToken; state.moving = true; break
    case "function_tools_executed": // the reply goes on after its tools: a new line
      for (const id of Object.keys(state.lines)) if (state.lines[id].agent === e.agent) { state.lines[id].finished = true; delete state.lines[id] } break
    case "agent_text": { const l = agentLine(e); l.text += e.delta; l.said += e.delta; state.voicing = l; break }
    case "conversation_item_added":
      if (e.item && state.seen.has(e.item.id)) break
      if (e.item) state.seen.add(e.item.id)
      if (e.item && e.item._tag === "Message" && e.item.role === "user") userLine(e.item.text)
      if (e.item && e.item._tag === "Message" && e.item.role === "assistant" && !e.item.interrupted) { const l = gapLine(e.item.agent); if (l) completeLine(l, e.item) }
      if (e.item && e.item._tag === "Message" && e.item.role === "assistant" && e.item.interrupted) {
        const l = [...state.all].reverse().find((l) => l.agent === e.item.agent && l.said.startsWith(e.item.text)); if (l) markCut(l, e.item.text)
      } break
    case "user_input_transcribed": interim(e.transcript, e.final); break
    case "speech_finished": { const l = state.lines[e.speechId]; if (l) { l.finished = true; if (e.interrupted) markCut(l) } } askTimeline(); break
    case "agent_handoff": $("floor").textContent = e.to; askTimeline(); handoffLine(e.from, e.to, e.kind); break
    case "audio_format": state.outRate = e.sampleRate; break
    case "clear": clearAudio(); { const l = state.lines[e.speechId]; if (l) markCut(l) } break
    case "error": line("agent", "error:", e.message); break
    case "close": state.ended = true; $("status").textContent = "closed: " + e.reason; break
    case "timeline": showTimeline(e.svg); break
  }
}
connect()
// Typed while reconnecting: sent once the session is back, not lost.
$("send").onsubmit = (ev) => { ev.preventDefault(); const t = $("text").value.trim(); if (!t) return
  cutTalking(); const frame = JSON.stringify({ type: "user_text", text: t })
  if (ws.readyState === 1) ws.send(frame); else state.outbox.push(frame)
  $("text").value = "" }
// The timeline follows the call (its latest event in view as it grows) unless the user scrolled back.
const latestEdge = (box) => { let right = 0
  for (const g of box.querySelectorAll("g.bar, g.floor, g.marker, g.passage")) right = Math.max(right, g.getBoundingClientRect().right)
  return right - box.getBoundingClientRect().left + box.scrollLeft }
const follow = () => { const box = $("timeline"); state.followAt = Math.max(0, Math.min(box.scrollWidth - box.clientWidth, latestEdge(box) + 24 - box.clientWidth)); box.scrollLeft = state.followAt }
const showTimeline = (svg) => {
  const box = $("timeline"); state.svg = svg; box.innerHTML = svg; box.className = $("fit").checked ? "fit" : ""
  $("openTimeline").disabled = false
  if (state.follow) follow()
}
$("timeline").onscroll = () => { state.follow = $("timeline").scrollLeft >= (state.followAt ?? 0) - 8 }
$("fit").onchange = () => { $("timeline").classList.toggle("fit", $("fit").checked); state.follow = true; follow() }
$("openTimeline").onclick = () => window.open(URL.createObjectURL(new Blob([state.svg], { type: "image/svg+xml" })), "_blank")
${microphoneScript}
// The microphone's level (root mean square of each frame, eased) on the meter while it is on.
const meter = (buffer) => {
  const p = new Int16Array(buffer); let sum = 0; for (let i = 0; i < p.length; i++) sum += p[i] * p[i]
  const rms = Math.sqrt(sum / Math.max(1, p.length)) / 32768
  state.level = Math.max(rms, state.level * 0.9); $("level").value = Math.min(1, Math.sqrt(state.level) * 1.5)
}
const startMic = async () => {
  if (state.mic) return
  startAudio(); const ctx = state.ctx; await ctx.resume()
  const { stream, node } = await openMicrophone(ctx)
  ws.send(JSON.stringify({ type: "audio_format", sampleRate: ctx.sampleRate }))
  $("level").hidden = false
  node.port.onmessage = (m) => { if (state.sending) meter(m.data); if (state.sending && ws.readyState === 1) { ws.send(m.data); state.heard += m.data.byteLength / 2 } }
  state.mic = { stream, node }
}
// The microphone sends while the button is held or open mic is on. When it stops, the server is
// told the audio ended: the speech in progress ends there (it would never hear the silence after it).
const setSending = () => { const was = state.sending; state.sending = state.holding || $("openMic").checked
  if (!state.sending) { state.level = 0; $("level").value = 0 }
  if (was && !state.sending && ws.readyState === 1) ws.send(JSON.stringify({ type: "audio_end" })) }
$("openMic").onchange = async () => { await startMic(); setSending() }
$("talk").onpointerdown = async () => { state.holding = true; await startMic(); setSending() }
$("talk").onpointerup = $("talk").onpointercancel = $("talk").onpointerleave = () => { state.holding = false; setSending() }
</script>
</body>
</html>
`

/** The page's icon at `/favicon.ico` (SVG: a baton across a speech bubble). */
export const favicon =
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect x="2" y="4" width="28" height="20" rx="6" fill="#1a5fd6"/>` +
  `<path d="M9 24 L7 30 L15 24 Z" fill="#1a5fd6"/><rect x="8" y="12.5" width="16" height="3" rx="1.5" fill="#fff" transform="rotate(-20 16 14)"/></svg>`

const hashesOf = (html: string, tag: "script" | "style") =>
  [...html.matchAll(new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`, "g"))]
    .map((match) => `'sha256-${createHash("sha256").update(match[1]!).digest("base64")}'`)
    .join(" ")

/**
 * The page's Content-Security-Policy: its own inline script and style (by hash, so nothing
 * injected into it runs), the microphone worklet it builds (`blob:`), WebSockets to its own
 * origin; no other source, no framing, no form posts.
 */
export const contentSecurityPolicy = (html: string): string =>
  [
    "default-src 'none'",
    `script-src ${hashesOf(html, "script")} blob:`,
    `style-src ${hashesOf(html, "style")}`,
    "connect-src 'self'",
    "img-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'"
  ].join("; ")
