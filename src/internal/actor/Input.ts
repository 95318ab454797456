/**
 * How an actor takes the user's turns: typed text, and what its realtime model heard (speech
 * starts, transcripts, answers the server started by itself). A turn that comes while the actor
 * cannot take it (a hook holding input, a tool step, the floor moving) is held, with a work token
 * so the session stays busy, and goes on once nothing holds it: here, or to whoever holds the
 * floor by then (docs/rules.md, rules 2 and 10).
 */
import { Effect } from "effect"
import * as Approvals from "../Approvals.ts"
import { type Message, message } from "../../ChatContext.ts"
import * as Speech from "../../Speech.ts"
import * as RealtimeReply from "../realtime/Reply.ts"
import * as Unanswered from "../realtime/Unanswered.ts"
import * as Reply from "../Reply.ts"
import type { Actor, Heard } from "./Actor.ts"
import * as Speeches from "../Speeches.ts"
import * as Lifecycle from "./Lifecycle.ts"
import * as TurnHook from "./TurnHook.ts"
import * as Work from "../Work.ts"

/**
 * A turn of the user that came while the actor could not take it: typed text, or a spoken turn
 * the server already holds (its words, once transcribed, in case the turn must follow the floor
 * to another agent).
 */
export type HeldInput =
  | { readonly _tag: "Typed"; readonly text: string; readonly itemId?: string | undefined }
  | {
    readonly _tag: "Spoken"
    /** Its transcript, once it came; `"untranscribable"`: the server could not transcribe it. */
    words: { readonly text: string; readonly itemId: string } | "untranscribable" | undefined
  }

const inToolPhase = (actor: Actor) => {
  const current = Speeches.current(actor.speeches)
  return current !== undefined && Speech.inToolPhase(current)
}

/** Input waits: the actor is not active (or is passing the floor), a hook holds input, or the
 * playing speech is running its tools. */
export const busyForInput = (actor: Actor): boolean =>
  !Lifecycle.isActive(actor) || actor.inner.inputHoldingHooks > 0 || inToolPhase(actor)

/** A new turn of the user: older speeches end, then `commit` records it and a reply answers it. */
export const takeTurn = (
  actor: Actor,
  commit: Effect.Effect<void>,
  body: (speech: Speech.Speech) => Effect.Effect<void, Reply.ReplyError> = (speech) => Reply.run(actor, speech, {})
): Effect.Effect<void> =>
  Effect.andThen(
    Speeches.interruptCurrent(actor.speeches, { force: false }),
    Effect.andThen(commit, Effect.sync(() => {
      Speeches.dropQueued(actor.speeches, "interrupted by the user", { force: false })
      Speeches.enqueue(actor.speeches, "user_turn", {}, body)
    }))
  )

export const userInput = (actor: Actor, text: string, itemId?: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (!actor.holdsFloor()) {
      actor.core.send({ _tag: "Input", text, itemId })
      return Effect.void
    }
    if (busyForInput(actor)) {
      hold(actor, { _tag: "Typed", text, itemId })
      return Effect.void
    }
    // The agent's turn hook sees the user's message, recorded first whatever it decides.
    let turn: Message | undefined
    return takeTurn(
      actor,
      Effect.sync(() => {
        if (itemId === undefined || !actor.chat.has(itemId)) {
          turn = message("user", text, { agent: actor.name, ...(itemId !== undefined ? { id: itemId } : {}) })
          actor.commit(turn)
        }
      }),
      actor.agent.onUserTurnCompleted ? (speech) => TurnHook.reply(actor, speech, turn) : undefined
    )
  })

/** Holds a turn of the user until the actor can take it (the work token keeps the session busy). */
const hold = (actor: Actor, held: HeldInput) => {
  Work.acquire(actor.core.work)
  actor.inner.held.push(held)
  const current = Speeches.current(actor.speeches)
  if (current && Speech.inToolPhase(current)) Speech.cutWordsAndFollowUp(current)
  // A call of the step waiting for approval would hold the turn for ever: the turn answers it.
  Approvals.bargeIn(actor)
}

/** Whether `releaseHeld` has anything to release now. */
export const mayReleaseHeld = (actor: Actor): boolean =>
  actor.inner.held.length > 0 && !(actor.holdsFloor() && busyForInput(actor))

/** Held user input goes on once nothing holds it: here, or to whoever holds the floor now. */
export const releaseHeld = (actor: Actor): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (!mayReleaseHeld(actor)) return Effect.void
    const next = actor.inner.held.shift()!
    const take = next._tag === "Typed"
      ? userInput(actor, next.text, next.itemId)
      : actor.holdsFloor()
      ? takeTurn(actor, Effect.void)
      : Effect.sync(() => forwardOne(actor, next))
    return take.pipe(
      Effect.andThen(Effect.sync(() => Work.release(actor.core.work))),
      Effect.andThen(releaseHeld(actor))
    )
  })

/** A held turn goes to whoever holds the floor now: a spoken one as its words (the server
 * that heard it was this actor's), or, when they have not come yet, once they come. */
const forwardOne = (actor: Actor, held: HeldInput) => {
  const core = actor.core
  if (held._tag === "Typed") return core.send({ _tag: "Input", text: held.text, itemId: held.itemId })
  // No words to pass on (the error was reported when the transcription failed).
  if (held.words === "untranscribable") return
  if (held.words) return core.send({ _tag: "Input", text: held.words.text, itemId: held.words.itemId })
  // The transcript comes after the server's answer (OpenAI transcribes on its own time): the
  // turn is answered by whoever holds the floor when it comes (see `heard`).
  if (actor.realtime) Unanswered.owe(actor.realtime.pool.unanswered)
}

/** Every held turn to the session (the actor passed the floor, or closed). */
export const forwardHeld = (actor: Actor) => {
  for (const held of actor.inner.held.splice(0)) {
    forwardOne(actor, held)
    Work.release(actor.core.work)
  }
}

/**
 * The user's last words in this actor's context if nothing answered them yet: the transcript
 * of a turn heard by the connection before it came to this actor (a handoff's merge).
 */
const unansweredUserTurn = (actor: Actor): { readonly text: string; readonly itemId: string } | undefined => {
  const items = actor.chat.items
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i]!
    if (item._tag === "Message" && item.role === "user") return { text: item.text, itemId: item.id }
    if ((item._tag === "Message" && item.role === "assistant") || item._tag === "FunctionCall") return undefined
  }
  return undefined
}

/** What the actor's realtime model heard, in the server's order. */
export const heard = (actor: Actor, event: Heard): Effect.Effect<void> =>
  Effect.suspend(() => {
    const inner = actor.inner
    switch (event._tag) {
      case "SpeechStarted":
        Speeches.dropQueued(actor.speeches, "interrupted by the user", { beforeTurn: event.userTurn })
        return Speeches.interruptCurrent(actor.speeches, { beforeTurn: event.userTurn })
      case "Transcript": {
        // A failed transcription still ends the wait for its turn's words: there are none.
        const words = event.failed ? undefined : { text: event.text, itemId: event.itemId }
        // The words of a held spoken turn, in case it must follow the floor.
        const waiting = inner.held.find((held) => held._tag === "Spoken" && held.words === undefined)
        if (!actor.holdsFloor()) {
          // Not this actor's to record: a held turn takes its words to the holder with it.
          if (waiting?._tag === "Spoken") waiting.words = words ?? "untranscribable"
          else {
            // Heard by this actor's connection as it passed the floor (seed 1904211): the user
            // spoke to whoever holds it now, whose context records the words and whose server
            // answer, if the connection moved with the floor, claims them.
            const holder = actor.core.holder()
            if (holder !== undefined && holder !== actor) holder.send({ _tag: "Heard", event })
          }
          return Effect.void
        }
        // Before the answer to its turn when the transcript came after it (the server's order).
        if (words && !actor.chat.has(event.itemId)) {
          actor.commit(message("user", event.text, { id: event.itemId, agent: actor.name }), event.followedBy)
        }
        if (waiting?._tag === "Spoken") waiting.words = words ?? "untranscribable"
        else if (actor.realtime) {
          // The words of a turn passed on without them are the holder's to answer.
          const owed = Unanswered.transcribed(actor.realtime.pool.unanswered, words)
          if (owed) actor.core.send({ _tag: "Input", text: owed.text, itemId: owed.itemId })
        }
        return Effect.void
      }
      case "ServerReply": {
        // Not for an actor that has passed the floor since: its connection left with it.
        if (!actor.holdsFloor()) return Effect.void
        // The session's, not this agent's: the words may have been heard by the previous holder.
        const words = actor.realtime ? Unanswered.claim(actor.realtime.pool.unanswered) : undefined
        if (busyForInput(actor)) {
          // Held as typed input is (a coordinator between its steps, a tool step): the server's
          // own answer is cancelled unheard, and the turn answered once nothing holds it, here
          // or by the next holder. Its words are the transcript heard last, or the next one.
          hold(actor, { _tag: "Spoken", words: words ?? unansweredUserTurn(actor) })
          return event.cancel
        }
        // The server answers a newer turn of the user by itself (its turn detection): older
        // replies are superseded, as typed input supersedes them. A model that sends no speech
        // events (Gemini) gives no other sign of the new turn (seed 219730).
        return takeTurn(actor, Effect.void, (speech) => RealtimeReply.run(actor, speech, {}, event.started))
      }
    }
  })
