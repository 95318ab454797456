/**
 * The operator's desk (issue 35): `/operator`, a page for a person who watches the live sessions
 * and can step in, and `/operator/ws`, its socket. With `BATON_TOKEN` set both need an operator
 * token (`POST /token?route=operator`), which a caller's `/ws` token is not.
 *
 * Client → server: `{"type":"list"}` (answered with `sessions`: id, who holds the floor, since
 * when, the last words), `{"type":"open","session":id}` (the conversation so far as `history`,
 * then every event of the session as `event`), `{"type":"whisper","text"}` (instructions only the
 * agent sees, for its next reply), `{"type":"take_over"}` (the floor passes to the operator: the
 * agent stops at once), `{"type":"say","text"}` (the operator's words to the caller),
 * `{"type":"hand_back","agent","note"}` (the floor back to an agent, the note for its next
 * reply). Each command is answered with `result` or `error`. An operator who leaves while
 * holding the floor hands it back to the agent taken over.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Fiber, Option, Queue, type Scope, Stream } from "effect"
import { Socket } from "effect/socket"
import { type Agent, type AgentSession, Human } from "../src/index.ts"
import type { SessionEvent } from "../src/Events.ts"
import type { Resumer } from "./Resumer.ts"

/** What the desk works with: the live sessions, and the agents the floor may be handed back to. */
export interface Desk {
  readonly resumer: Resumer
  readonly agents: ReadonlyArray<Agent.Agent<any>>
}

/** A live session as the list shows it. */
export interface SessionSummary {
  readonly id: string
  readonly holder: string | undefined
  /** When the holder got the floor (ms since the epoch). */
  readonly since: number | undefined
  readonly last: { readonly who: string; readonly text: string } | undefined
}

const summary = (session: AgentSession.AgentSession): Effect.Effect<SessionSummary> =>
  Effect.gen(function*() {
    const events = yield* session.eventLog
    const moved = events.findLast((e) => e.type === "agent_handoff")
    const items = (yield* session.history).items
    const last = items.findLast((i) => i._tag === "Message" && (i.role === "user" || i.role === "assistant"))
    return {
      id: session.id,
      holder: moved?.type === "agent_handoff" ? moved.to : undefined,
      since: moved?.at,
      last: last?._tag === "Message" ? { who: last.role === "user" ? "caller" : last.agent ?? "agent", text: last.text } : undefined
    }
  })

/** The sessions live on this process, oldest first. */
export const sessions = (desk: Desk): Effect.Effect<ReadonlyArray<SessionSummary>> =>
  Effect.forEach(desk.resumer.list(), (call) => summary(call.line.session))

const parse = (frame: string): { readonly type: string; readonly [k: string]: unknown } | undefined => {
  try {
    const value = JSON.parse(frame)
    return typeof value === "object" && value !== null && typeof value.type === "string" ? value : undefined
  } catch {
    return undefined
  }
}

/** One operator's socket: a person (a `Human` named "operator") who may take over the session opened. */
export const serve = (socket: Socket.Socket, desk: Desk) =>
  Effect.gen(function*() {
    const reader = yield* socket.reader
    const writer = yield* socket.writer
    const outbox = yield* Queue.unbounded<string>()
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(outbox), (frame) => writer.write(frame).pipe(Effect.ignore))))
    const send = (frame: object) => Effect.sync(() => void Queue.offerUnsafe(outbox, JSON.stringify(frame)))
    const operator = yield* Human.make({ name: "operator" })
    // The floor goes back to an agent, never to a task (a task is started by its caller).
    const handsBackTo = desk.agents.filter((a) => a.task === undefined)
    // What the caller says reaches the page as the session's events; the queue is not kept.
    yield* Effect.forkScoped(Stream.runDrain(operator.heard))
    let opened: AgentSession.AgentSession | undefined
    let watching: Fiber.Fiber<void> | undefined
    // (The service's agents run in its sessions: what they need, the sessions have.)
    const agentNamed = (name: unknown) => handsBackTo.find((a) => a.name === name) as Agent.Agent | undefined
    /** The agent the floor was taken from, by the last take-over's record. */
    const takenFrom = (session: AgentSession.AgentSession) =>
      Effect.map(session.eventLog, (events) => {
        const taken = events.findLast((e): e is Extract<SessionEvent, { type: "agent_handoff" }> => e.type === "agent_handoff" && e.kind === "take_over")
        return agentNamed(taken?.from) ?? (handsBackTo[0] as Agent.Agent | undefined)
      })
    const onCommand = (command: { readonly type: string; readonly [k: string]: unknown }): Effect.Effect<void, never, Scope.Scope> =>
      Effect.gen(function*() {
        if (command.type === "list") return yield* send({ type: "sessions", sessions: yield* sessions(desk), agents: handsBackTo.map((a) => a.name) })
        if (command.type === "open") {
          const call = desk.resumer.find(String(command.session))
          if (!call) return yield* send({ type: "error", message: `no live session ${String(command.session)}` })
          if (watching) yield* Fiber.interrupt(watching)
          const session = call.line.session
          opened = session
          // Events from here on, then what was said so far (the page merges items by id).
          watching = yield* Effect.forkScoped(Stream.runForEach(session.events, (event) => send({ type: "event", event })), { startImmediately: true })
          return yield* send({ type: "history", session: session.id, items: (yield* session.history).items, summary: yield* summary(session) })
        }
        const session = opened
        if (!session) return yield* send({ type: "error", message: "open a session first" })
        switch (command.type) {
          case "whisper":
            return yield* session.whisper(String(command.text ?? "")).pipe(
              Effect.andThen(send({ type: "result", of: "whisper" })),
              Effect.catch((e) => send({ type: "error", of: "whisper", message: e.message }))
            )
          case "take_over":
            return yield* send({ type: "result", of: "take_over", outcome: yield* session.takeOver(operator, { reason: "an operator took over" }) })
          case "say":
            return yield* operator.say(String(command.text ?? "")).pipe(
              Effect.andThen(send({ type: "result", of: "say" })),
              Effect.catch((e) => send({ type: "error", of: "say", message: e.message }))
            )
          // A tool call waiting for approval (`needsApproval`): the operator answers it.
          case "approve":
          case "reject": {
            const callId = String(command.callId ?? "")
            const answer = command.type === "approve"
              ? session.approve(callId)
              : session.reject(callId, typeof command.reason === "string" && command.reason !== "" ? { reason: command.reason } : {})
            return yield* answer.pipe(
              Effect.andThen(send({ type: "result", of: command.type, callId })),
              Effect.catch((e) => send({ type: "error", of: command.type, message: e.message }))
            )
          }
          case "hand_back": {
            const agent = agentNamed(command.agent)
            if (!agent) return yield* send({ type: "error", of: "hand_back", message: `no agent ${String(command.agent)} (expected ${handsBackTo.map((a) => a.name).join(", ")})` })
            const note = typeof command.note === "string" && command.note !== "" ? command.note : undefined
            return yield* send({ type: "result", of: "hand_back", outcome: yield* session.handBack(agent, { note }) })
          }
          default:
            return yield* send({ type: "error", message: `unknown command ${command.type}` })
        }
      })
    // Leaving with the floor would strand the caller: it goes back to the agent taken over.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        const session = opened
        if (!session || operator.holding() !== session.id) return Effect.void
        return Effect.flatMap(takenFrom(session), (agent) => (agent ? Effect.asVoid(session.handBack(agent, { note: "The operator left." })) : Effect.void))
      })
    )
    while (true) {
      const frames = yield* reader.pull.pipe(Effect.map(Option.some), Effect.catch(() => Effect.succeed(Option.none())))
      if (Option.isNone(frames)) return
      for (const frame of frames.value) {
        const command = typeof frame === "string" ? parse(frame) : undefined
        yield* command ? onCommand(command) : send({ type: "error", message: "a frame is one JSON command with a type" })
      }
    }
  }).pipe(Effect.scoped)

/**
 * The operator's page: the live sessions (who holds the floor, for how long, the last words); the
 * one opened, with its transcript and its floor's timeline as they happen; whisper, take over,
 * say, hand back with a note. It opens `/operator/ws` with the token it was loaded with.
 */
export const page = (): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>baton · operator</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; display: grid; grid-template-columns: 320px 1fr; height: 100vh; color: #0f172a }
aside { border-right: 1px solid #cbd5e1; padding: 12px; overflow: auto; background: #f8fafc }
main { padding: 12px; display: grid; grid-template-rows: auto 1fr auto; gap: 8px; min-height: 0 }
h1 { font-size: 16px; margin: 0 0 8px }
#sessions { list-style: none; padding: 0; margin: 0 }
#sessions li { padding: 6px; border: 1px solid #cbd5e1; border-radius: 6px; margin-bottom: 6px; cursor: pointer; background: #fff }
#sessions li.open { border-color: #1a5fd6 }
.panes { display: grid; grid-template-columns: 2fr 1fr; gap: 8px; min-height: 0 }
#transcript, #timeline { border: 1px solid #cbd5e1; border-radius: 6px; padding: 8px; overflow: auto; margin: 0 }
.line .who { font-weight: 600; margin-right: 6px }
.line.user .who { color: #0f766e } .line.operator .who { color: #b45309 } .cut { color: #64748b }
form { display: flex; gap: 6px; margin: 4px 0 } input[type=text] { flex: 1 }
#status { color: #64748b }
</style></head>
<body>
<aside><h1>Live sessions</h1><ul id="sessions"></ul></aside>
<main>
<div><strong>Session</strong> <span id="sessionId">–</span> · floor: <span id="holder">–</span> <span id="status"></span></div>
<div class="panes"><div id="transcript"></div><ol id="timeline"></ol></div>
<div id="approvals"></div>
<div>
<form id="whisperForm"><input id="whisper" type="text" placeholder="Whisper to the agent (only it sees this)"><button>Whisper</button></form>
<form id="takeOverForm"><button id="takeOver">Take over</button></form>
<form id="sayForm"><input id="say" type="text" placeholder="Say to the caller"><button>Say</button></form>
<form id="handBackForm"><select id="agent"></select><input id="note" type="text" placeholder="Note for the agent's next reply"><button id="handBack">Hand back</button></form>
</div>
</main>
<script>
const $ = (id) => document.getElementById(id)
const state = { session: undefined, items: new Map(), agents: [], results: [] }
window.desk = state
const token = new URLSearchParams(location.search).get("token")
const ws = new WebSocket(location.origin.replace(/^http/, "ws") + "/operator/ws" + (token ? "?token=" + encodeURIComponent(token) : ""))
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
  $("holder").textContent = to
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
ws.onopen = () => { $("status").textContent = "connected"; send({ type: "list" }); setInterval(() => send({ type: "list" }), 2000) }
ws.onclose = () => { $("status").textContent = "disconnected" }
ws.onmessage = (m) => {
  const e = JSON.parse(m.data)
  switch (e.type) {
    case "sessions":
      showSessions(e.sessions)
      if (state.agents.join() !== e.agents.join()) { state.agents = e.agents; $("agent").replaceChildren(...e.agents.map((a) => Object.assign(document.createElement("option"), { value: a, textContent: a }))) }
      break
    case "history":
      state.session = e.session; state.items.clear(); $("sessionId").textContent = e.session
      $("transcript").replaceChildren(); $("timeline").replaceChildren()
      for (const item of e.items) { if (item._tag === "AgentHandoff") floor(item.from, item.to, item.kind); else showItem(item) }
      break
    case "event":
      if (e.event.type === "conversation_item_added") showItem(e.event.item)
      if (e.event.type === "agent_handoff") floor(e.event.from, e.event.to, e.event.kind, e.event.at)
      if (e.event.type === "tool_approval_requested") askApproval(e.event)
      if (e.event.type === "tool_approval_answered") document.querySelector('[data-call="' + e.event.callId + '"]')?.remove()
      if (e.event.type === "close") $("status").textContent = "session closed"
      break
    case "result": state.results.push(e); break
    case "error": state.results.push(e); $("status").textContent = "error: " + e.message; break
  }
}
$("whisperForm").onsubmit = (ev) => { ev.preventDefault(); send({ type: "whisper", text: $("whisper").value }); $("whisper").value = "" }
$("takeOverForm").onsubmit = (ev) => { ev.preventDefault(); send({ type: "take_over" }) }
$("sayForm").onsubmit = (ev) => { ev.preventDefault(); send({ type: "say", text: $("say").value }); $("say").value = "" }
$("handBackForm").onsubmit = (ev) => { ev.preventDefault(); send({ type: "hand_back", agent: $("agent").value, note: $("note").value }); $("note").value = "" }
</script>
</body></html>
`
