/**
 * A reply: model steps until the agent has answered in words, with tool batches in between.
 * Every step first checks that the actor holds the floor, and every delivered piece of text
 * checks it again: an agent that passed the floor makes no model call and says nothing (rule 2).
 */
import { Context, Deferred, Effect, Exit, Stream } from "effect"
import { AiError, type LanguageModel, type Response } from "effect/ai"
import { ModelCall, type ModelCallInfo } from "../../services/ModelCall.ts"
import * as ModelParts from "../../services/ModelParts.ts"
import * as ModelCallMeter from "../observe/ModelCallMeter.ts"
import { isVoid, provideOnFiber } from "./EffectFastPaths.ts"
import type { Actor } from "./actor/Actor.ts"
import * as ActorTools from "./actor/ActorTools.ts"
import { message } from "../ChatContext.ts"
import { toPrompt } from "../ChatPrompt.ts"
import type { ReplyOptions, SayOptions } from "../CurrentAgent.ts"
import { MissingModel, ModelStreamError } from "../Errors.ts"
import type { RealtimeError } from "../../services/RealtimeModel.ts"
import { followUpCut, generate as startGenerating, type Speech, words as playsWords, wordsEnded } from "../Speech.ts"
import * as Preemptive from "./Preemptive.ts"
import * as Speeches from "./Speeches.ts"
import * as RealtimeReply from "./realtime/Reply.ts"
import * as ToolBatch from "./ToolBatch.ts"
import * as Whispers from "./Whispers.ts"
import * as Lifecycle from "./actor/Lifecycle.ts"

export interface PendingCall {
  readonly callId: string
  readonly name: string
  readonly arguments: string
  /** The provider's id of the call's item (realtime), used as its chat item id. */
  readonly itemId?: string | undefined
}

/**
 * What a reply fails with: its agent has no model (any more), the model's call failed, its
 * stream said so, or the realtime connection failed.
 */
export type ReplyError = MissingModel | AiError.AiError | ModelStreamError | RealtimeError

export const reply = (actor: Actor, speech: Speech, options: ReplyOptions): Effect.Effect<void, ReplyError> =>
  Effect.suspend(() => {
    if (options.userInput !== undefined) actor.commit(message("user", options.userInput, { agent: actor.name }))
    return steps(actor, speech, options)
  })

export const say = (actor: Actor, speech: Speech, text: string, options: SayOptions): Effect.Effect<void> => {
  const info = { speechId: speech.handle.id, agent: actor.name }
  const out = actor.core.textOutput
  let delivered = false
  return Effect.suspend(() => {
    if (!actor.holdsFloor()) return Effect.interrupt
    actor.setState("speaking")
    return out.start(info).pipe(
      Effect.andThen(out.write(text, info)),
      Effect.andThen(out.drain ? out.drain(info) : Effect.void),
      Effect.andThen(Effect.sync(() => {
        delivered = true
      }))
    )
  }).pipe(
    Effect.onExit((exit) =>
      Effect.suspend(() => {
        if (options.addToContext !== false && (delivered || Exit.isFailure(exit))) {
          const kept = delivered ? text : out.heard?.(info) ?? ""
          actor.commit(message("assistant", kept, { agent: actor.name, interrupted: !delivered }))
        }
        return out.end(info, !delivered)
      })
    )
  )
}

/** Runs model steps for `speech` until the agent answers without calling tools. */
export const run = (actor: Actor, speech: Speech, options: ReplyOptions): Effect.Effect<void, ReplyError> =>
  Effect.suspend(() => steps(actor, speech, options))

/** The reply's steps, realtime or text; called on a step. Whispers (an operator's, a hand
 * back's note) waiting for the agent's next reply go with this one. */
const steps = (actor: Actor, speech: Speech, options: ReplyOptions): Effect.Effect<void, ReplyError> => {
  const withWhispers = Whispers.take(actor, options)
  return actor.realtime ? RealtimeReply.run(actor, speech, withWhispers) : textSteps(actor, speech, withWhispers)
}

// Plain effects, not a generator: a reply's first step is on every turn's and handoff's path.
// Called on a step; the steps' state is made per run (a retried reply starts over).
const textSteps = (actor: Actor, speech: Speech, options: ReplyOptions): Effect.Effect<void, ReplyError> => {
  let instructions = options.instructions
  let toolChoice: LanguageModel.ToolChoice<string> = options.toolChoice ?? "auto"
  const step = (n: number): Effect.Effect<void, ReplyError> => {
    if (!actor.holdsFloor()) return Effect.void
    // A step that follows a wait (an interjection, a tool step) makes no model call once the
    // session began closing (rule 11).
    if (actor.core.closed()) return Effect.interrupt
    const model = actor.model()
    if (!model) {
      // Checked at start for the first agent (AgentSession.start); here for one whose own model's
      // layer failed to build.
      return Effect.fail(MissingModel.of(actor.name))
    }
    const choice = n >= actor.agent.maxToolSteps ? "none" : toolChoice
    // Words a tool said meanwhile are spoken first: one voice at a time.
    if (n > 0 && Speeches.interjectingOver(actor.speeches, speech)) {
      return Effect.flatMap(Speeches.interjectedOver(actor.speeches, speech), () =>
        // the floor may be moving meanwhile (rule 2), or the follow-up be cut (the user spoke),
        // or the session be closing (rule 11)
        actor.core.closed()
          ? Effect.interrupt
          : !actor.holdsFloor() || Lifecycle.isPassing(actor) || followUpCut(speech)
          ? Effect.void
          : generateStep(n, model, choice))
    }
    return generateStep(n, model, choice)
  }
  const generateStep = (n: number, model: LanguageModel.LanguageModel, choice: LanguageModel.ToolChoice<string>) => {
    // Generating again after a tool step: interruptible like any reply.
    startGenerating(speech)
    ActorTools.refresh(actor)
    const prompt = toPrompt(actor.chat, { instructions: actor.agent.instructions, extraInstructions: instructions })
    const called = startStep(actor, speech, model)
    return Effect.flatMap(generate(called, model, prompt, choice, speech), () =>
      called.calls.length === 0 ? Effect.void : Effect.flatMap(ToolBatch.run(actor, speech, called.calls), (next) => {
        if (next !== "reply") return Effect.void
        instructions = undefined
        toolChoice = "auto"
        return step(n + 1)
      }))
  }
  return step(0)
}

/** One model step as it streams: what was said, whether the output was opened, the calls. */
interface Step {
  readonly actor: Actor
  readonly info: ModelCallInfo
  readonly meter: ReturnType<typeof ModelCallMeter.start>
  readonly calls: Array<PendingCall>
  text: string
  started: boolean
  /** The words said before the step's tool calls were cut (they run; see `playBeforeCalls`). */
  cut: boolean
}

/** One part of the model's stream: text out as it arrives, calls collected, usage metered.
 * Both streams carry the fields read here in the same shape (tool-call params undecoded). */
const onPart = (step: Step, part: Response.StreamPartEncoded | Response.StreamPart<any>): Effect.Effect<void, ReplyError> => {
  const actor = step.actor
  if (!actor.holdsFloor()) return Effect.interrupt
  switch (part.type) {
    case "finish":
      step.meter.usage({ inputTokens: part.usage.inputTokens.total, outputTokens: part.usage.outputTokens.total })
      return Effect.void
    case "response-metadata":
      step.meter.model(part.modelId)
      return Effect.void
    case "text-delta": {
      const delta = part.delta
      if (delta === "") return Effect.void
      step.meter.text()
      const out = actor.core.textOutput
      // Called as the stream reaches the part: the output opens on this step. A reply streams
      // many parts, so each costs as few steps as it can, and none when the output has
      // nothing to run (it returns `Effect.void`: no output, or one that writes at once).
      let opened: Effect.Effect<void> = Effect.void
      if (!step.started) {
        step.started = true
        actor.setState("speaking")
        opened = out.start(step.info)
      }
      const write = out.write(delta, step.info)
      if (isVoid(write)) {
        if (isVoid(opened)) {
          step.text += delta
          return Effect.void
        }
        return Effect.map(opened, () => {
          step.text += delta
        })
      }
      const written = Effect.map(write, () => {
        step.text += delta
      })
      return isVoid(opened) ? written : Effect.andThen(opened, written)
    }
    case "tool-call": {
      step.calls.push({
        callId: part.id,
        name: part.name,
        arguments: typeof part.params === "string" ? part.params : JSON.stringify(part.params ?? {})
      })
      return Effect.void
    }
    case "error":
      return Effect.fail(streamError(actor.name, part.error))
    default:
      return Effect.void
  }
}

/** An `error` part's error, typed: an `AiError` as it is, anything else wrapped. */
const streamError = (agent: string, error: unknown): AiError.AiError | ModelStreamError =>
  AiError.isAiError(error) ? error : new ModelStreamError({
    agent,
    message: error instanceof Error ? error.message : typeof error === "string" ? error : "the model's stream reported an error",
    cause: error
  })

const startStep = (actor: Actor, speech: Speech, model: LanguageModel.LanguageModel): Step => {
  const speechId = speech.handle.id
  const named = ModelParts.infoOf(model)
  const meter = ModelCallMeter.start({ speechId, agent: actor.name, kind: "llm", provider: named?.provider ?? "unknown", model: named?.model ?? "unknown" }, actor.core.now)
  // The meter is the call's ModelCallInfo too (speech, agent, served, failedOver).
  return { actor, info: meter, meter, calls: [], text: "", started: false, cut: false }
}

/**
 * The words a step said before its tool calls, played once the model made the calls: the speech
 * is in its `words` phase, so a cut (the user typed or spoke, `interrupt`, the floor passing) ends
 * the words and the follow-up but not the calls, which run next (issue 39; LiveKit runs tools
 * already started). Nothing is said over them, and a task waits for them to end.
 */
const playBeforeCalls = (step: Step, speech: Speech, played: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.suspend(() => {
    const cut = Deferred.makeUnsafe<void>()
    playsWords(speech, () => {
      step.cut = true
      Deferred.doneUnsafe(cut, Effect.void)
    })
    return Effect.raceFirst(played, Deferred.await(cut)).pipe(Effect.ensuring(Effect.sync(() => wordsEnded(speech))))
  })

/** One model step: streams the text out as it arrives and collects the tool calls in `step`. */
const generate = (
  step: Step,
  model: LanguageModel.LanguageModel,
  prompt: ReturnType<typeof toPrompt>,
  toolChoice: LanguageModel.ToolChoice<string>,
  speech: Speech
): Effect.Effect<void, ReplyError> => {
  const { actor, info, meter } = step
  const out = actor.core.textOutput
  actor.setState("thinking")
  const parts = ModelParts.partsOf(model)
  // A voice output plays after the text: the step ends when the words were heard (or cut).
  // Without one (text), the step is the model call alone: no extra step on the hot path.
  const drain = out.drain
  // Called on the step the model call ends on.
  const ended = (exit: Exit.Exit<void, ReplyError>) => {
    if (!drain) actor.core.emit(meter.end(exit))
    const interrupted = Exit.isFailure(exit) || step.cut
    // Cut short: the history keeps what the user heard, when the output knows it.
    const kept = interrupted && step.started && out.heard ? out.heard(info) ?? step.text : step.text
    if (kept !== "") actor.commit(message("assistant", kept, { agent: actor.name, interrupted }))
    return step.started ? out.end(info, interrupted) : Effect.void
  }
  // The call's `ModelCall` is set on the fiber on the step that starts the call and restored on
  // the step it ends on (`provideService` would take a step of its own for each).
  return Effect.withFiber((fiber) => {
    const context = Context.add(fiber.context, ModelCall, info)
    // A call made ahead for this very request (voice preemptive generation) streams its parts.
    const preempted = Preemptive.take(actor, prompt, toolChoice)
    const steps: Effect.Effect<void, ReplyError> = preempted
      ? ModelParts.forEachPart(preempted, (part) => onPart(step, part))
      : parts
      ? ModelParts.runOn(fiber, parts, { prompt, tools: actor.definitions, toolChoice }, (part) => onPart(step, part))
      : ModelParts.forEachPart(
        model.streamText({
          prompt,
          toolkit: actor.toolkit,
          toolChoice,
          disableToolCallResolution: true,
          toolCallValidation: "deferred"
        }) as Stream.Stream<Response.StreamPart<any>, AiError.AiError>,
        (part) => onPart(step, part)
      )
    const body = drain
      ? steps.pipe(
        Effect.onExit((exit) => Effect.sync(() => actor.core.emit(meter.end(exit)))),
        Effect.andThen(Effect.suspend(() =>
          !step.started ? Effect.void : step.calls.length === 0 ? drain(info) : playBeforeCalls(step, speech, drain(info))
        ))
      )
      : steps
    return provideOnFiber(fiber, context, body, ended)
  })
}
