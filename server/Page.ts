/**
 * The playground page at `/`: plain HTML and one script, no build. It opens `/ws`, sends text,
 * captures the microphone through an AudioWorklet as PCM16 (push-to-talk or open mic), plays the
 * agent's audio gap-free and drops it at once on `clear`, and shows the transcript, who holds the
 * floor and every event as it arrives (a live handoff timeline).
 */
import { createHash } from "node:crypto"

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

export const page = (options: { readonly model: string }): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>baton playground</title>
<style>
  body { font: 15px/1.4 system-ui, sans-serif; margin: 0; display: grid; grid-template-columns: 1fr 360px; height: 100vh; }
  main { display: flex; flex-direction: column; padding: 12px 16px; min-height: 0; }
  aside { border-left: 1px solid #ddd; padding: 12px; overflow: auto; background: #fafafa; font-size: 13px; }
  header { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; }
  #floor { font-weight: 600; padding: 2px 8px; border-radius: 10px; background: #e8f0fe; }
  #transcript { flex: 1; overflow: auto; margin: 12px 0; }
  .msg { margin: 6px 0; } .msg b { margin-right: 6px; } .user b { color: #555; } .agent b { color: #1a5fd6; }
  .handoff { color: #7a3fb8; font-style: italic; margin: 6px 0; }
  form { display: flex; gap: 8px; } input[type=text] { flex: 1; padding: 6px; }
  #timeline { overflow: auto; max-height: 45vh; margin-bottom: 12px; } #timeline svg { height: auto; max-width: none; }
  #events div { border-bottom: 1px solid #eee; padding: 2px 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  .muted { color: #777; }
</style>
</head>
<body>
<main>
  <header>
    <strong>baton</strong>
    <span>floor: <span id="floor">–</span></span>
    <span id="status" class="muted">connecting…</span>
    <label><input type="checkbox" id="openMic"> open mic</label>
    <button id="talk" type="button">hold to talk</button>
  </header>
  <div class="muted" id="model">${escapeHtml(options.model)}</div>
  <div id="transcript"></div>
  <form id="send"><input type="text" id="text" placeholder="Type to the agent holding the floor" autocomplete="off"><button>Send</button></form>
</main>
<aside><strong>Handoff timeline</strong><div id="timeline" class="muted">after the first turn</div><strong>Events</strong><div id="events"></div></aside>
<script>
const $ = (id) => document.getElementById(id)
const state = { audioIn: "none", speaking: {}, playAt: 0, sources: [], outRate: 24000, ctx: null, mic: null, sending: false, holding: false, heard: 0, played: 0 }
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
const url = new URL("ws", location.href); url.protocol = location.protocol === "https:" ? "wss:" : "ws:"
const token = new URLSearchParams(location.search).get("token"); if (token) url.searchParams.set("token", token)
const ws = new WebSocket(url); ws.binaryType = "arraybuffer"
const audioContext = () => state.ctx ??= new AudioContext()
const play = (buffer) => {
  const ctx = audioContext(); const pcm = new Int16Array(buffer); const f = new Float32Array(pcm.length)
  for (let i = 0; i < pcm.length; i++) f[i] = pcm[i] / 32768
  const b = ctx.createBuffer(1, f.length, state.outRate); b.copyToChannel(f, 0)
  const src = ctx.createBufferSource(); src.buffer = b; src.connect(ctx.destination)
  state.playAt = Math.max(state.playAt, ctx.currentTime + 0.02); src.start(state.playAt); state.playAt += b.duration
  state.played += pcm.length; state.sources.push(src); src.onended = () => { state.sources = state.sources.filter((s) => s !== src) }
}
const clearAudio = () => { for (const s of state.sources) { try { s.stop() } catch {} } state.sources = []; state.playAt = 0 }
// The message handler is set before anything awaits the microphone, so no frame is missed.
ws.onmessage = (m) => {
  if (typeof m.data !== "string") return play(m.data)
  const e = JSON.parse(m.data)
  if (e.type !== "timeline" && e.type !== "agent_text") logEvent(e)
  switch (e.type) {
    case "ready": state.audioIn = e.audio; $("floor").textContent = e.agent || "–"
      $("status").textContent = e.audio === "none" ? "connected · text only (no realtime model or voice pipeline on this server)" : "connected · voice on"
      $("talk").disabled = $("openMic").disabled = e.audio === "none"; break
    case "function_tools_executed": // the reply goes on after its tools: a new line
      for (const id of Object.keys(state.speaking)) if (state.speaking[id].dataset.agent === e.agent) delete state.speaking[id]; break
    case "agent_text":
      if (!state.speaking[e.speechId]) { state.speaking[e.speechId] = line("agent", e.agent + ":", ""); state.speaking[e.speechId].dataset.agent = e.agent }
      state.speaking[e.speechId].append(e.delta); break
    case "conversation_item_added":
      if (e.item && e.item._tag === "Message" && e.item.role === "user") line("user", "you:", e.item.text); break
    case "agent_handoff": $("floor").textContent = e.to; clearTimeout(state.redraw)
      state.redraw = setTimeout(() => ws.readyState === 1 && ws.send(JSON.stringify({ type: "timeline" })), 150)
      { const d = document.createElement("div"); d.className = "handoff"; d.textContent = "floor: " + (e.from || "–") + " → " + e.to + (e.kind ? " (" + e.kind + ")" : ""); $("transcript").append(d) } break
    case "audio_format": state.outRate = e.sampleRate; break
    case "clear": clearAudio(); break
    case "error": line("agent", "error:", e.message); break
    case "close": $("status").textContent = "closed: " + e.reason; break
    case "timeline": $("timeline").innerHTML = e.svg; $("timeline").className = ""; break
    case "speech_finished": clearTimeout(state.redraw)
      state.redraw = setTimeout(() => ws.readyState === 1 && ws.send(JSON.stringify({ type: "timeline" })), 150); break
  }
}
ws.onclose = () => { $("status").textContent = "disconnected" }
$("send").onsubmit = (ev) => { ev.preventDefault(); const t = $("text").value.trim(); if (!t) return
  ws.send(JSON.stringify({ type: "user_text", text: t })); $("text").value = "" }
const worklet = "registerProcessor('pcm16', class extends AudioWorkletProcessor { process(inputs) { const c = inputs[0][0]; if (c) { const p = new Int16Array(c.length); for (let i = 0; i < c.length; i++) p[i] = Math.max(-32768, Math.min(32767, c[i] * 32768)); this.port.postMessage(p.buffer, [p.buffer]) } return true } })"
const startMic = async () => {
  if (state.mic) return
  const ctx = audioContext(); await ctx.resume()
  const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true } })
  await ctx.audioWorklet.addModule(URL.createObjectURL(new Blob([worklet], { type: "text/javascript" })))
  const node = new AudioWorkletNode(ctx, "pcm16"); ctx.createMediaStreamSource(stream).connect(node)
  ws.send(JSON.stringify({ type: "audio_format", sampleRate: ctx.sampleRate }))
  node.port.onmessage = (m) => { if (state.sending && ws.readyState === 1) { ws.send(m.data); state.heard += m.data.byteLength / 2 } }
  state.mic = { stream, node }
}
// The microphone sends while the button is held or open mic is on. When it stops, the server is
// told the audio ended: the speech in progress ends there (it would never hear the silence after it).
const setSending = () => { const was = state.sending; state.sending = state.holding || $("openMic").checked
  if (was && !state.sending && ws.readyState === 1) ws.send(JSON.stringify({ type: "audio_end" })) }
$("openMic").onchange = async () => { await startMic(); setSending() }
$("talk").onpointerdown = async () => { state.holding = true; await startMic(); setSending() }
$("talk").onpointerup = $("talk").onpointercancel = $("talk").onpointerleave = () => { state.holding = false; setSending() }
</script>
</body>
</html>
`

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
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'"
  ].join("; ")
