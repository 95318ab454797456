/**
 * A reply started on the user's words before their turn ended (the voice pipeline's preemptive
 * generation): the model call the holder would make for those words runs ahead, its parts kept
 * aside. Nothing is said and nothing recorded: when the turn ends with the same words, the
 * holder's first model step finds its prompt here and streams the kept parts instead of calling
 * the model again (`take`); otherwise the call is stopped and its parts dropped (`discard`).
 *
 * A preemptive call is a speech like any other for the rules: it stops when its agent no longer
 * holds the floor (rule 2), when the session closes (it runs in the session's Scope, rule 11),
 * and it is only used by the agent it was made for, with exactly the prompt it was made with
 * (a turn hook or a whisper that changes the prompt makes the turn call the model itself).
 */
import { type Cause, Effect, type Fiber, Queue, Stream } from "effect"
import type { AiError, LanguageModel, Prompt, Response } from "effect/ai"
import { ModelCall } from "../../services/ModelCall.ts"
import { message } from "../ChatContext.ts"
import { toPrompt } from "../ChatPrompt.ts"
import type { Actor } from "./actor/Actor.ts"
import * as Lifecycle from "./actor/Lifecycle.ts"
import type { SessionCore } from "./SessionCore.ts"
import * as Speeches from "./Speeches.ts"

type Part = Response.StreamPart<any>

interface Preempted {
  readonly actor: Actor
  readonly text: string
  /** The prompt as a key (a model request's prompt is compared whole). */
  readonly key: string
  readonly parts: Queue.Queue<Part, AiError.AiError | Cause.Done>
  readonly fiber: Fiber.Fiber<void>
  /** The turn was sent: the holder's next first step takes it or drops it. */
  committed: boolean
}

/** One preemptive call per session at most (a new one replaces the old). */
const slots = new WeakMap<SessionCore, Preempted>()

const keyOf = (prompt: Prompt.Prompt, toolChoice: LanguageModel.ToolChoice<string>) =>
  JSON.stringify([prompt.content, toolChoice])

const stop = (core: SessionCore, slot: Preempted, outcome: "discarded" | "used") => {
  if (slots.get(core) === slot) slots.delete(core)
  // (a closing session says nothing more: its last event is `close`)
  if (!core.closed()) core.emit({ type: "voice_decision", decision: "preemptive_generation", outcome, transcript: slot.text })
}

/**
 * Starts the holder's reply to `text` ahead of the turn's end: only for an agent that listens
 * (active, saying nothing), talks through a text model and holds the floor. Returns whether it
 * started. Replaces (and drops) an earlier one. `onText` sees its text as it comes (the agent's
 * name and each delta, then `complete` once it is all there), while the agent holds the floor.
 */
export const start = (
  core: SessionCore,
  text: string,
  onText?: (agent: string, delta: string, complete: boolean) => Effect.Effect<void>
): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    discardNow(core)
    const actor = core.holder()
    if (actor === undefined || core.closed() || actor.realtime || !Lifecycle.isActive(actor)) return false
    // Only for an agent that waits for the user: no speech plays or waits (one held while the
    // user spoke would answer first), no turn is held, it is not thinking.
    if (Speeches.current(actor.speeches) !== undefined || Speeches.queued(actor.speeches) > 0) return false
    if (actor.inner.held.length > 0 || actor.inner.state !== "listening") return false
    const model = actor.model()
    if (model === undefined) return false
    const chat = actor.chat.append(message("user", text, { agent: actor.name }))
    const prompt = toPrompt(chat, { instructions: actor.agent.instructions })
    const parts = yield* Queue.unbounded<Part, AiError.AiError | Cause.Done>()
    const call = model.streamText({
      prompt,
      toolkit: actor.toolkit,
      toolChoice: "auto",
      disableToolCallResolution: true,
      toolCallValidation: "deferred"
    }) as Stream.Stream<Part, AiError.AiError>
    // The request goes out when the fiber runs: only if the agent still holds the floor then.
    const mayCall = () => actor.holdsFloor() && Lifecycle.isActive(actor) && !core.closed()
    const run = Stream.suspend(() => (mayCall() ? call : Stream.empty)).pipe(
      // cut, not sent, once the agent no longer holds the floor (rule 2)
      Stream.takeWhile(() => actor.holdsFloor()),
      // (the voice output may synthesize the first words ahead, unheard: `onText`)
      Stream.runForEach((part) =>
        onText !== undefined && part.type === "text-delta"
          ? Effect.andThen(onText(actor.name, part.delta, false), Queue.offer(parts, part))
          : Queue.offer(parts, part)
      ),
      Effect.matchCauseEffect({
        onFailure: (cause) => Effect.sync(() => void Queue.failCauseUnsafe(parts, cause)),
        onSuccess: () =>
          onText !== undefined && actor.holdsFloor()
            ? Effect.andThen(onText(actor.name, "", true), Queue.end(parts))
            : Queue.end(parts)
      }),
      Effect.asVoid,
      Effect.provideService(ModelCall, { agent: actor.name, speechId: "preemptive" })
    )
    const fiber = yield* Effect.forkIn(run, core.scope)
    slots.set(core, { actor, text, key: keyOf(prompt, "auto"), parts, fiber, committed: false })
    core.emit({ type: "voice_decision", decision: "preemptive_generation", outcome: "started", transcript: text })
    return true
  })

/** Drops the preemptive call, if any (the user went on). */
const discardNow = (core: SessionCore) => {
  const slot = slots.get(core)
  if (slot === undefined) return
  stop(core, slot, "discarded")
  slot.fiber.interruptUnsafe()
}

/** The user went on (or the turn did not end with these words): the preemptive call is dropped. */
export const discard = (core: SessionCore): Effect.Effect<void> => Effect.sync(() => discardNow(core))

/** The turn was sent with `text`: the holder's next first model step takes the call or drops it. */
export const commit = (core: SessionCore, text: string): Effect.Effect<void> =>
  Effect.sync(() => {
    const slot = slots.get(core)
    if (slot === undefined) return
    if (slot.text !== text) return discardNow(core)
    slot.committed = true
  })

/**
 * The parts of the preemptive call made for this very request, if there is one: the actor it
 * was made for, still holding the floor, the same prompt and tool choice. A committed call that
 * does not match is dropped: the turn calls the model itself.
 */
export const take = (
  actor: Actor,
  prompt: Prompt.Prompt,
  toolChoice: LanguageModel.ToolChoice<string>
): Stream.Stream<Part, AiError.AiError> | undefined => {
  const core = actor.core
  const slot = slots.get(core)
  if (slot === undefined || !slot.committed) return undefined
  if (slot.actor !== actor || !actor.holdsFloor() || slot.key !== keyOf(prompt, toolChoice)) {
    discardNow(core)
    return undefined
  }
  stop(core, slot, "used")
  return Stream.fromQueue(slot.parts)
}
