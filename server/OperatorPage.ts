/**
 * The operator desk's page (HTML, its script inline), served at `/operator` by Server.ts; what it
 * sends and receives over `/operator/ws` is Operator.ts's. Kept apart from the socket's logic:
 * it is one string, read by a browser, not by the server.
 */

/**
 * The operator's page: the live sessions (who holds the floor, for how long, the last words); the
 * one opened, with its transcript, its floor's timeline and its audio (listen in) as they happen;
 * whisper, take over, say or speak, hand back with a note; transfers offered to this operator,
 * ringing, with Accept and Decline. It opens `/operator/ws` with the token (and name) it was
 * loaded with.
 */
import { microphoneScript } from "./MicrophoneScript.ts"

export const page = (): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>baton · operator</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; display: grid; grid-template-columns: 320px 1fr; height: 100vh; color: #0f172a }
aside { border-right: 1px solid #cbd5e1; padding: 12px; overflow: auto; background: #f8fafc }
main { padding: 12px; display: grid; grid-template-rows: auto auto 1fr auto auto auto; gap: 8px; min-height: 0 }
h1 { font-size: 16px; margin: 0 0 8px }
#sessions { list-style: none; padding: 0; margin: 0 }
#sessions li { padding: 6px; border: 1px solid #cbd5e1; border-radius: 6px; margin-bottom: 6px; cursor: pointer; background: #fff }
#sessions li.open { border-color: #1a5fd6 }
.panes { display: grid; grid-template-columns: 2fr 1fr; gap: 8px; min-height: 0 }
#transcript, #timeline { border: 1px solid #cbd5e1; border-radius: 6px; padding: 8px; overflow: auto; margin: 0 }
.line .who { font-weight: 600; margin-right: 6px }
.line.user .who { color: #0f766e } .line.operator .who { color: #b45309 } .cut { color: #64748b }
form { display: flex; gap: 6px; margin: 4px 0 } input[type=text] { flex: 1 }
#status, #audio { color: #64748b }
.offer { border: 2px solid #b45309; border-radius: 6px; padding: 8px; margin-bottom: 6px; background: #fffbeb }
.offer .briefing { margin: 4px 0; white-space: pre-wrap } .offer .ring { font-weight: 600; color: #b45309; margin-right: 8px }
#picture { overflow: auto; max-height: 30vh } #picture svg { height: auto }
</style></head>
<body>
<aside><h1>Live sessions</h1><ul id="sessions"></ul></aside>
<main>
<div id="offers"></div>
<div><strong>Session</strong> <span id="sessionId">–</span> · floor: <span id="holder">–</span> <span id="status"></span> <span id="audio"></span></div>
<div class="panes"><div id="transcript"></div><ol id="timeline"></ol></div>
<div id="picture"></div>
<div id="approvals"></div>
<div>
<form id="whisperForm"><input id="whisper" type="text" placeholder="Whisper to the agent (only it sees this)"><button>Whisper</button></form>
<form id="takeOverForm"><button id="takeOver">Take over</button> <button type="button" id="cancelTakeOver" hidden>Cancel take-over (waiting for the transfer)</button></form>
<form id="sayForm"><input id="say" type="text" placeholder="Say to the caller"><button>Say</button> <label><input type="checkbox" id="speak" disabled> speak (microphone)</label></form>
<form id="handBackForm"><select id="agent"></select><input id="note" type="text" placeholder="Note for the agent's next reply"><button id="handBack">Hand back</button></form>
</div>
</main>
<script>
const $ = (id) => document.getElementById(id)
const state = { session: undefined, items: new Map(), agents: [], results: [], offers: new Map(), holder: undefined, name: "operator",
  listen: { rate: 24000, frames: 0, loud: 0, peak: 0 }, ctx: null, playAt: 0, mic: null, voiceFrames: 0 }
window.desk = state
const query = new URLSearchParams(location.search)
const params = new URLSearchParams()
for (const key of ["token", "name"]) if (query.get(key)) params.set(key, query.get(key))
if (query.get("name")) state.name = query.get("name")
const ws = new WebSocket(location.origin.replace(/^http/, "ws") + "/operator/ws" + (params.size ? "?" + params : ""))
ws.binaryType = "arraybuffer"
const send = (message) => ws.readyState === 1 && ws.send(JSON.stringify(message))
const since = (at) => at ? Math.round((Date.now() - at) / 1000) + " s" : ""
const showSessions = (list) => {
  const ul = $("sessions")
  ul.replaceChildren(...list.map((s) => {
    const li = document.createElement("li")
    li.dataset.session = s.id
    if (s.id === state.session) li.className = "open"
    li.textContent = s.id + " · " + (s.holder || "–") + " for " + since(s.since) + (s.last ? " · " + s.last.who + ": " + s.last.text : "")
    li.onclick = () => send({ type: "open", session: s.id })
    return li
  }))
}
const showItem = (item) => {
  if (item._tag !== "Message" || (item.role !== "user" && item.role !== "assistant")) return
  state.items.set(item.id, item)
  let div = document.querySelector('[data-item="' + item.id + '"]')
  if (!div) { div = document.createElement("div"); div.dataset.item = item.id; $("transcript").append(div) }
  const who = item.role === "user" ? "caller" : item.agent || "agent"
  div.className = "line " + (item.role === "user" ? "user" : who === "operator" ? "operator" : "agent")
  div.replaceChildren(Object.assign(document.createElement("span"), { className: "who", textContent: who + ":" }), document.createTextNode(item.text), item.interrupted ? Object.assign(document.createElement("span"), { className: "cut", textContent: " (cut)" }) : "")
  $("transcript").scrollTop = $("transcript").scrollHeight
}
const floor = (from, to, kind, at) => {
  $("holder").textContent = to; state.holder = to
  // The microphone goes to the caller only while this operator holds the floor.
  $("speak").disabled = to !== state.name
  if (to !== state.name && $("speak").checked) { $("speak").checked = false; send({ type: "audio_end" }) }
  askPicture()
  const li = document.createElement("li")
  li.textContent = new Date(at || Date.now()).toLocaleTimeString() + " " + (from || "–") + " → " + to + " (" + kind + ")"
  $("timeline").append(li)
}
// A call waiting for approval: its tool and arguments, and the two answers.
const askApproval = (event) => {
  const row = document.createElement("div")
  row.dataset.call = event.callId
  const button = (label, type) => Object.assign(document.createElement("button"), { textContent: label, onclick: () => send({ type, callId: event.callId }) })
  row.append(document.createTextNode(event.agent + " asks to run " + event.tool + " " + event.arguments + " "), button("Approve", "approve"), button("Reject", "reject"))
  $("approvals").append(row)
}
// Sound starts on a click or key (the browser's autoplay policy); audio before it is not queued.
const startAudio = () => { state.ctx ??= new AudioContext(); state.ctx.resume() }
addEventListener("pointerdown", startAudio, true); addEventListener("keydown", startAudio, true)
// Listen in: the session's audio (caller and agents mixed), played gap-free as it comes.
const play = (buffer) => {
  const pcm = new Int16Array(buffer); let peak = 0
  for (let i = 0; i < pcm.length; i++) peak = Math.max(peak, Math.abs(pcm[i]))
  state.listen.frames++; state.listen.peak = Math.max(state.listen.peak, peak); if (peak > 500) state.listen.loud++
  const ctx = state.ctx; if (!ctx || ctx.state !== "running") return
  const f = new Float32Array(pcm.length); for (let i = 0; i < pcm.length; i++) f[i] = pcm[i] / 32768
  const b = ctx.createBuffer(1, f.length, state.listen.rate); b.copyToChannel(f, 0)
  const src = ctx.createBufferSource(); src.buffer = b; src.connect(ctx.destination)
  state.playAt = Math.max(state.playAt, ctx.currentTime + 0.05); src.start(state.playAt); state.playAt += b.duration
}
// An incoming transfer: who it is for, the session, the briefing, a countdown; Accept or Decline.
const showOffer = (offer, remainingMs) => {
  const row = document.createElement("div"); row.className = "offer"; row.dataset.offer = offer.id
  const deadline = Date.now() + remainingMs
  const ring = Object.assign(document.createElement("span"), { className: "ring" })
  const tick = () => { const s = Math.max(0, Math.ceil((deadline - Date.now()) / 1000)); ring.textContent = s > 0 ? "ringing · " + s + " s" : "no answer" }
  tick(); state.offers.set(offer.id, setInterval(tick, 250))
  const button = (label, type) => Object.assign(document.createElement("button"), { textContent: label, className: type, onclick: () => send({ type, offer: offer.id }) })
  const head = document.createElement("div")
  head.append(ring, document.createTextNode("Incoming " + offer.kind + " transfer for " + offer.to + (offer.session ? " · session " + offer.session : "") + " "), button("Accept", "accept"), button("Decline", "decline"))
  row.append(head)
  if (offer.briefing) row.append(Object.assign(document.createElement("div"), { className: "briefing", textContent: offer.briefing }))
  $("offers").append(row)
}
const closeOffer = (id) => { clearInterval(state.offers.get(id)); state.offers.delete(id); document.querySelector('[data-offer="' + id + '"]')?.remove() }
// The timeline picture of the open session, redrawn after each passage of the floor.
const askPicture = () => { clearTimeout(state.redraw); state.redraw = setTimeout(() => send({ type: "timeline" }), 150) }
// The operator's microphone, sent while "speak" is on.
${microphoneScript}
const startMic = async () => {
  if (state.mic) return
  startAudio(); const ctx = state.ctx; await ctx.resume()
  const { stream, node } = await openMicrophone(ctx)
  send({ type: "audio_format", sampleRate: ctx.sampleRate })
  node.port.onmessage = (m) => { if ($("speak").checked && ws.readyState === 1) { ws.send(m.data); state.voiceFrames++ } }
  state.mic = { stream, node }
}
$("speak").onchange = async () => { if ($("speak").checked) await startMic(); else send({ type: "audio_end" }) }
ws.onopen = () => { $("status").textContent = "connected"; send({ type: "list" }); setInterval(() => send({ type: "list" }), 2000) }
ws.onclose = () => { $("status").textContent = "disconnected" }
ws.onmessage = (m) => {
  if (typeof m.data !== "string") return play(m.data)
  const e = JSON.parse(m.data)
  switch (e.type) {
    case "sessions":
      showSessions(e.sessions)
      if (state.agents.join() !== e.agents.join()) { state.agents = e.agents; $("agent").replaceChildren(...e.agents.map((a) => Object.assign(document.createElement("option"), { value: a, textContent: a }))) }
      break
    case "history":
      state.session = e.session; state.items.clear(); $("sessionId").textContent = e.session
      $("transcript").replaceChildren(); $("timeline").replaceChildren(); $("approvals").replaceChildren()
      $("audio").textContent = e.audio === "none" ? "· text only: this session has no audio to listen to" : "· listening in (" + e.audio + ")"
      for (const item of e.items) { if (item._tag === "AgentHandoff") floor(item.from, item.to, item.kind); else showItem(item) }
      break
    case "event":
      if (e.event.type === "conversation_item_added") { showItem(e.event.item); askPicture() }
      if (e.event.type === "agent_handoff") floor(e.event.from, e.event.to, e.event.kind, e.event.at)
      if (e.event.type === "tool_approval_requested") askApproval(e.event)
      if (e.event.type === "tool_approval_answered") document.querySelector('[data-call="' + e.event.callId + '"]')?.remove()
      if (e.event.type === "close") $("status").textContent = "session closed"
      break
    case "audio_format": state.listen.rate = e.sampleRate; break
    case "offer": showOffer(e.offer, e.remainingMs); break
    case "offer_closed": closeOffer(e.id); break
    case "timeline": $("picture").innerHTML = e.svg; break
    case "result":
      state.results.push(e)
      if (e.of === "accept" || e.of === "decline") closeOffer(e.offer)
      // An accepted transfer's take-over waits for its return: cancellable until its result.
      if (e.of === "accept" && e.session) $("cancelTakeOver").hidden = false
      if (e.of === "take_over") {
        $("cancelTakeOver").hidden = true
        if (e.outcome._tag === "NotApplied") $("status").textContent = "take-over not applied: " + e.outcome.reason
      }
      break
    case "error": state.results.push(e); $("status").textContent = "error: " + e.message; break
  }
}
$("whisperForm").onsubmit = (ev) => { ev.preventDefault(); send({ type: "whisper", text: $("whisper").value }); $("whisper").value = "" }
$("takeOverForm").onsubmit = (ev) => { ev.preventDefault(); send({ type: "take_over" }) }
$("cancelTakeOver").onclick = () => send({ type: "cancel_take_over" })
$("sayForm").onsubmit = (ev) => { ev.preventDefault(); send({ type: "say", text: $("say").value }); $("say").value = "" }
$("handBackForm").onsubmit = (ev) => { ev.preventDefault(); send({ type: "hand_back", agent: $("agent").value, note: $("note").value }); $("note").value = "" }
</script>
</body></html>
`
