/**
 * Shared assertions for the rules of docs/rules.md, over a session's history and event log.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import type { ChatContext, FunctionCallOutput } from "../src/ChatContext.ts"
import type { SessionEvent } from "../src/Events.ts"

/** Rule 4: every function call has exactly one output, and no output lacks its call. */
export const assertEveryCallAnswered = (history: ChatContext) => {
  const calls = history.items.filter((i) => i._tag === "FunctionCall")
  const outputs = history.items.filter((i): i is FunctionCallOutput => i._tag === "FunctionCallOutput")
  for (const call of calls) {
    const answers = outputs.filter((o) => o.callId === call.callId)
    assert.strictEqual(answers.length, 1, `call ${call.name} (${call.callId}) has ${answers.length} outputs`)
    const callIndex = history.items.indexOf(call)
    assert.isTrue(history.items.indexOf(answers[0]!) > callIndex, `output of ${call.name} comes before its call`)
  }
  for (const output of outputs) {
    assert.isTrue(calls.some((c) => c.callId === output.callId), `output ${output.name} (${output.callId}) has no call`)
  }
}

/** Outputs of calls, in the order they entered the history. */
export const outputNames = (history: ChatContext) =>
  history.items.flatMap((i) => (i._tag === "FunctionCallOutput" ? [i.name] : []))

export const callNames = (history: ChatContext) =>
  history.items.flatMap((i) => (i._tag === "FunctionCall" ? [i.name] : []))

/** The sequence number of the first handoff event to `to`. */
export const handoffSeq = (events: ReadonlyArray<SessionEvent>, to: string): number => {
  const event = events.find((e) => e.type === "agent_handoff" && e.to === to)
  assert.isDefined(event, `no handoff to ${to}`)
  return event!.seq
}

/** Events produced by `agent` (speech, items, state) after `seq`. */
export const eventsOfAgentAfter = (events: ReadonlyArray<SessionEvent>, agent: string, seq: number) =>
  events.filter((e) =>
    e.seq > seq &&
    ((e.type === "speech_created" || e.type === "speech_finished" || e.type === "agent_state_changed") && e.agent === agent ||
      e.type === "conversation_item_added" && e.agent === agent)
  )

/**
 * Rule 1 over an event log: every item, speech or state event of an agent happens while that
 * agent holds the floor (the floor as the `agent_handoff` events say), and each handoff record
 * is immediately followed by its event (one atomic step).
 */
export const assertOneFloor = (events: ReadonlyArray<SessionEvent>) => {
  let holder: string | undefined
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!
    if (e.type === "agent_handoff") {
      const before = events[i - 1]
      assert.isTrue(
        before?.type === "conversation_item_added" && before.item._tag === "AgentHandoff" && before.item.to === e.to &&
          before.seq === e.seq - 1,
        `handoff to ${e.to} at seq ${e.seq} is not one atomic step with its record`
      )
      holder = e.to
      continue
    }
    const agent = e.type === "conversation_item_added" || e.type === "speech_created" || e.type === "speech_finished" ||
        e.type === "agent_state_changed"
      ? e.agent
      : undefined
    if (agent === undefined) continue
    if (e.type === "conversation_item_added" && e.item._tag === "AgentHandoff") continue
    assert.strictEqual(agent, holder, `event ${e.seq} (${e.type}) by ${agent} while ${holder} held the floor`)
  }
}

/**
 * Waits on the live clock until `check` holds, polling every 10 ms (tests over real sockets or
 * real audio, where TestClock cannot drive the other side); fails with `what` after `ms`.
 */
export const until = (what: string, check: () => boolean, ms = 30_000) =>
  Effect.promise(async () => {
    const end = Date.now() + ms
    while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 10))
    if (!check()) throw new Error(`never: ${what}`)
  })
