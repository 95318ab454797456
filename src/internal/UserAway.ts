/**
 * The user is away: no word from them for the session's `userAwayTimeout` while the agent holding
 * the floor waits for them (it is listening and they are not speaking). The session then says so
 * (`user_state_changed` to `away`) and the holder's `onUserAway` hook runs; it runs again (with
 * `times` counting up) each time the agent has spoken since and the user still says nothing.
 * When the user speaks or types, they are back (`speaking`, or `listening` for a typed turn).
 *
 * The watcher reads the session's events (it changes nothing but its own record) and its timer
 * sleeps on the `Clock`, so a `TestClock` drives it. Waiting for the user is not the session's
 * work: it holds no work token; the hook it starts does (Hooks.ts).
 */
import { Effect, Queue, Stream } from "effect"
import type { SessionEvent } from "../Events.ts"
import type { SessionCore } from "./SessionCore.ts"

/** What the watcher knows: one record, written by `observe` and `fire` only. */
interface Watch {
  readonly timeoutMs: number
  /** Each agent's last state, and who holds the floor: only the holder's state counts (an agent
   * handed the floor mid-reply is thinking though the one before it was listening). */
  readonly states: Map<string, string>
  holder: string | undefined
  agentListening: boolean
  userSpeaking: boolean
  away: boolean
  /** How many times `onUserAway` ran since the user was last heard. */
  times: number
  /** Counts the changes that restart the wait; `firedAt`: the change the last firing followed. */
  generation: number
  firedAt: number
  closed: boolean
}

const waiting = (w: Watch) => w.agentListening && !w.userSpeaking && !w.closed && w.firedAt !== w.generation

/** Updates the record from one event; true when the wait starts over. */
const observe = (w: Watch, core: SessionCore, event: SessionEvent): boolean => {
  switch (event.type) {
    case "agent_state_changed":
      w.states.set(event.agent, event.state)
      w.agentListening = w.states.get(w.holder ?? event.agent) === "listening"
      w.generation++
      return true
    case "agent_handoff":
      w.holder = event.to
      w.agentListening = w.states.get(event.to) === "listening"
      w.generation++
      return true
    case "user_state_changed":
      if (event.state === "away") return false
      w.userSpeaking = event.state === "speaking"
      if (event.state === "speaking") back(w)
      w.generation++
      return true
    case "conversation_item_added":
      if (event.item._tag !== "Message" || event.item.role !== "user") return false
      // A typed turn (or a transcript) while away: the user is back, listening to the reply.
      if (w.away && !core.closed()) {
        back(w)
        core.emit({ type: "user_state_changed", state: "listening" })
      }
      w.generation++
      return true
    case "close":
      w.closed = true
      return true
    default:
      return false
  }
}

const back = (w: Watch) => {
  w.away = false
  w.times = 0
}

/** The wait ran out: the user is away, and the holder is told. */
const fire = (w: Watch, core: SessionCore) => {
  w.firedAt = w.generation
  const holder = core.holder()
  if (w.closed || core.closed() || holder === undefined) return
  w.times++
  if (!w.away) {
    w.away = true
    core.emit({ type: "user_state_changed", state: "away" })
  }
  holder.send({ _tag: "UserAway", times: w.times })
}

/**
 * Watches `events` (the session's stream, subscribed as this starts) and runs the timer; runs
 * until the session closes. Fork it in the session's Scope before the session starts.
 */
export const run = (core: SessionCore, events: Stream.Stream<SessionEvent>, timeoutMs: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    const w: Watch = {
      timeoutMs,
      states: new Map(),
      holder: undefined,
      agentListening: false,
      userSpeaking: false,
      away: false,
      times: 0,
      generation: 0,
      firedAt: -1,
      closed: false
    }
    const changed = yield* Queue.sliding<void>(1)
    const timer = Effect.gen(function*() {
      while (!w.closed) {
        if (!waiting(w)) {
          yield* Queue.take(changed)
          continue
        }
        const generation = w.generation
        const ranOut = yield* Effect.raceFirst(Effect.as(Effect.sleep(w.timeoutMs), true), Effect.as(Queue.take(changed), false))
        if (ranOut && generation === w.generation && waiting(w)) fire(w, core)
      }
    })
    yield* Effect.forkChild(timer)
    yield* Stream.runForEach(events, (event) =>
      Effect.sync(() => {
        if (observe(w, core, event)) Queue.offerUnsafe(changed, undefined)
      }))
  })
