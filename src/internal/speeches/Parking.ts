/**
 * A flow that waits for a speech (`handle.wait` in a tool or hook) gives its work token back
 * while it waits, and the speech returns it before waking the flow (`finish`): the speech's own
 * token keeps the session busy meanwhile, and a task its tools run lets the session go quiet
 * (rule 10). A hook waiting so lets the actor's next hook go, as one waiting for a task does.
 */
import { Deferred, Effect } from "effect"
import * as Speech from "../../Speech.ts"
import { CurrentCall, HookLane, WorkToken, type WorkTokenCell } from "../FlowContext.ts"
import { type Speeches, stackIndex } from "./State.ts"
import * as Work from "../Work.ts"

/**
 * `handle.wait`: a flow holding a work token (a hook, a tool call) gives it back while it waits,
 * and `finish` returns it before waking the flow, so the speech's own work decides whether the
 * session is busy. A tool call that waits for the speech it runs in, or one under it, would wait
 * for ever (that speech waits for the call): a defect that says so, which answers the call.
 */
export const waitFor = (speeches: Speeches, speech: Speech.Speech): Effect.Effect<Speech.SpeechOutcome> =>
  Effect.withFiber((fiber) => {
    if (Deferred.isDoneUnsafe(speech.done)) return Deferred.await(speech.done)
    const call = fiber.getRef(CurrentCall)
    if (call && call.foreground()) {
      const own = stackIndex(speeches.state, call.speech)
      const target = stackIndex(speeches.state, speech)
      if (call.speech === speech || (own >= 0 && target >= 0 && target < own)) {
        return Effect.die(
          new Error(`a tool cannot wait for the speech it was called in (${speech.handle.id}), which waits for the tool: start a new reply or say and wait for that`)
        )
      }
    }
    // A hook waiting for a speech does not hold up the actor's next hook: the speech may wait
    // for the floor to come back (a task its tool runs), and an onExit must not wait for that.
    fiber.getRef(HookLane)?.()
    return awaitEnd(speeches, speech, fiber.getRef(WorkToken))
  })

/** Waits for `speech` to end; a token `cell` holds is given back meanwhile and returned (by
 * `finish`, before the speech's own is let go) as it ends. */
export const awaitEnd = (speeches: Speeches, speech: Speech.Speech, cell: WorkTokenCell): Effect.Effect<Speech.SpeechOutcome> => {
  if (!cell.held || Deferred.isDoneUnsafe(speech.done)) return Deferred.await(speech.done)
  const work = speeches.config.work
  const waiter: Speech.ParkedWaiter = { returned: false }
  cell.held = false
  speech.parked.push(waiter)
  Work.release(work)
  return Deferred.await(speech.done).pipe(
    Effect.onExit(() =>
      Effect.sync(() => {
        // Woken otherwise (interrupted): the flow takes its token back itself.
        if (!waiter.returned) {
          const index = speech.parked.indexOf(waiter)
          if (index >= 0) speech.parked.splice(index, 1)
          waiter.returned = true
          Work.acquire(work)
        }
        cell.held = true
      })
    )
  )
}

/** A speech's own work token as a cell `awaitEnd` can park (its state holds it). */
export const tokenOf = (speech: Speech.Speech): WorkTokenCell => ({
  get held() {
    return Speech.holdsToken(speech)
  },
  set held(held: boolean) {
    Speech.setToken(speech, held)
  }
})
