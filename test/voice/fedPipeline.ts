/**
 * A voice pipeline fed by hand under `TestClock`, shared by the turn-taking tests (turns,
 * early-reply): frames of speech (non-zero samples) and silence, pushed one at a time as a line
 * delivers them, and a clock moved in 20 ms steps with every fiber let run at each.
 */
import { Cause, Effect, Queue, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { AudioOutput } from "../../services/AudioOutput.ts"
import type { Agent } from "../../src/index.ts"
import type { VoiceDecision } from "../../src/Events.ts"
import type * as VoiceInput from "../../src/voice/VoiceInput.ts"
import * as VoicePipeline from "../../src/voice/VoicePipeline.ts"
import { recorder } from "./harness.ts"

export const RATE = 16000

export const speech = (ms: number) => Array.from({ length: ms / 20 }, () => AudioFrame.make(new Int16Array(320).fill(1000), RATE))
export const silence = (ms: number) => Array.from({ length: ms / 20 }, () => AudioFrame.silence(20, RATE))

/** Lets every fiber run what it can without the clock moving. */
export const settle = Effect.forEach(Array.from({ length: 300 }), () => Effect.yieldNow, { discard: true })

/** Moves the clock in 20 ms steps, letting every fiber run at each. */
export const advance = (ms: number) =>
  Effect.forEach(Array.from({ length: ms / 20 }), () => TestClock.adjust("20 millis").pipe(Effect.andThen(settle)), { discard: true })

/** A pipeline fed by hand, its output recorded. */
export const pipeline = (agent: Agent.Agent, voice: VoiceInput.VoiceInputOptions = {}) =>
  Effect.gen(function*() {
    const line = yield* Queue.unbounded<VoiceInput.Input, Cause.Done>()
    const out = recorder()
    const { session } = yield* VoicePipeline.start({ agent, input: Stream.fromQueue(line), voice }).pipe(
      Effect.provideService(AudioOutput, out.output)
    )
    // one frame at a time, as a line delivers them (each heard before the next comes)
    const push = (frames: ReadonlyArray<AudioFrame.AudioFrame>) =>
      Effect.forEach(frames, (frame) => Queue.offer(line, frame).pipe(Effect.andThen(settle)), { discard: true })
    const messages = (role: "user" | "assistant") =>
      Effect.map(session.history, (h) => h.items.flatMap((i) => (i._tag === "Message" && i.role === role ? [i.text] : [])))
    const decisions = (kind: VoiceDecision["decision"]) =>
      Effect.map(session.eventLog, (events) => events.flatMap((e) => (e.type === "voice_decision" && e.decision === kind ? [e] : [])))
    return { session, out, push, messages, decisions }
  })

export const outcomes = (events: ReadonlyArray<VoiceDecision>) => events.map((e) => e.outcome)
