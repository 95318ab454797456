/**
 * A caller's session, whichever way they reach the service (a browser on /ws, a phone call on
 * /twilio): with a realtime model, the caller's audio goes to the holder's connection at the
 * model's rate; without one, VAD, STT and TTS engines in the context make it a cascaded voice
 * session that hears the audio itself. The agents' audio goes to the route's `AudioOutput`, and
 * both sides are recorded as WAV files when `BATON_RECORD_DIR` is set.
 *
 * With a durable store (`BATON_STORE`) every session is journaled and stays resumable from the
 * store when this process dies; it is marked ended there when its call ends here (its client
 * closed, the grace ran out), unless it moved to another node or another process claimed it.
 * A line closed any other way (an interruption, a defect) leaves it resumable, as a crash does.
 */
import { randomBytes } from "node:crypto"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { type Cause, Clock, Effect, FileSystem, Option, Queue, type Schema, type Scope, Stream } from "effect"
import * as AudioFrame from "../services/AudioFrame.ts"
import { AudioOutput, type AudioOutputService } from "../services/AudioOutput.ts"
import { CallControl, CallControlError, type CallControlService, noDtmf } from "../services/CallControl.ts"
import { Resampler, type ResamplerStage } from "../services/Resampler.ts"
import { type RealtimeError, RealtimeModel } from "../services/RealtimeModel.ts"
import type { SessionNotFound, SessionStoreService, StoreError } from "../services/SessionStore.ts"
import { Stt, type SttService } from "../services/Stt.ts"
import type { TextOutputService } from "../services/TextOutput.ts"
import { type Agent, AgentSession, type Durability, type SessionClosed } from "../src/index.ts"
import * as AudioRecorder from "../src/observe/AudioRecorder.ts"
import type * as Transfer from "../src/Transfer.ts"
import * as VoiceInput from "../src/voice/VoiceInput.ts"
import * as VoicePipeline from "../src/voice/VoicePipeline.ts"
import type { ConnectionContext } from "./Connection.ts"
import * as ListenIn from "./ListenIn.ts"

export interface Line {
  readonly session: AgentSession.AgentSession
  /** Who hears the caller's audio: the holder's realtime connection, the voice pipeline, or no one. */
  readonly audio: "realtime" | "pipeline" | "none"
  /** One frame of the caller's audio, at any rate. */
  readonly hear: (frame: AudioFrame.AudioFrame) => Effect.Effect<void, RealtimeError | SessionClosed>
  /** The caller's audio stopped (push-to-talk released): what follows is silence, so the speech
   * in progress ends. To a realtime model, a second of silence (its turn detection hears it), as
   * when no audio comes for half a second. */
  readonly endAudio: Effect.Effect<void, RealtimeError | SessionClosed>
  /** The call ended here for good (not moved): the session is marked ended in the store when
   * this line closes. Without it (a move, an interruption, a defect) it stays resumable, as after a crash. */
  readonly markEnded: () => void
  /** Both sides of the call for an operator listening in (the caller's audio, the agents'). */
  readonly tap: ListenIn.Tap
  /** A person's voice to the caller, where the agents' audio goes (an operator who took over). */
  readonly speak: (frame: AudioFrame.AudioFrame, who: string) => Effect.Effect<void>
  /**
   * What transcribes an operator's voice into the history: a voice pipeline's speech-to-text, or
   * on a realtime line the `Stt` the service was given. Not the realtime model's own input
   * transcription: what reaches its input is the user's turn, and the model would answer it.
   */
  readonly transcriber: SttService | undefined
}

/**
 * Where the service journals its sessions, and what it needs to resume one another process
 * wrote: every agent and task a session may run (found again by name) and the userdata's Schema.
 */
export interface DurableSessions {
  readonly store: SessionStoreService
  readonly agents: ReadonlyArray<Agent.Agent<CallControl | Transfer.Transferer>>
  readonly userdataSchema?: Schema.Codec<unknown, unknown> | undefined
  /** This process as the sessions' writer (unique per process: a fleet's nodes fence one another). */
  readonly owner: string
}

/** Why a session could not be resumed from the store. */
export type ResumeFailure =
  | StoreError
  | SessionNotFound
  | Durability.SessionNotResumable
  | Durability.AgentNotFound
  | Durability.UserdataRefused

/** Silence given a realtime model when the caller's audio stops: longer than its turn detection's
 * silence (OpenAI's server VAD waits 500 ms by default). */
const REALTIME_END_SILENCE_MS = 1000
/** A realtime line that sends no audio for this long has stopped (a muted microphone, a stalled client). */
const REALTIME_QUIET_MS = 500

/** For a realtime model: when the caller's audio stops (said, or no frame for REALTIME_QUIET_MS),
 * it is given silence once, so its turn detection ends the speech in progress. */
const realtimeQuiet = (session: AgentSession.AgentSession, rate: number) =>
  Effect.gen(function*() {
    const frames = yield* Queue.sliding<void>(1)
    /** Audio came since the last silence given. */
    let owed = false
    const giveSilence = Effect.suspend(() => {
      if (!owed) return Effect.void
      owed = false
      return session.pushAudio(AudioFrame.toPcm16(AudioFrame.silence(REALTIME_END_SILENCE_MS, rate)))
    })
    yield* Effect.forkScoped(Effect.forever(Effect.gen(function*() {
      const next = owed ? yield* Effect.timeoutOption(Queue.take(frames), REALTIME_QUIET_MS) : Option.some(yield* Queue.take(frames))
      if (Option.isNone(next)) yield* Effect.ignore(giveSilence)
    })))
    const heard = Effect.suspend(() => {
      owed = true
      return Queue.offer(frames, undefined)
    })
    return { heard, stopped: giveSilence }
  })

/** A line with no call to control (a caller of `start` that gives none). */
const noCallControl: CallControlService = {
  transport: "this line",
  hangUp: () => Effect.fail(new CallControlError({ reason: "unsupported", message: "this line cannot hang up" })),
  sendDtmf: noDtmf("this line")
}

/** Starts the caller's session in the current Scope; `text` is where the agents' words go as they
 * stream; `control`: how its agents hang up and press keys (CallTools). */
export const start = (
  ctx: ConnectionContext,
  output: AudioOutputService,
  text?: TextOutputService,
  control: CallControlService = noCallControl
): Effect.Effect<Line, never, Scope.Scope | Transfer.Transferer> =>
  open(ctx, output, text, control, undefined) as Effect.Effect<Line, never, Scope.Scope | Transfer.Transferer>

/** Resumes session `id` from the store (claimed: the process that wrote it last is fenced) in
 * the current Scope, with the voice a new line gets on this service: a realtime model's audio, or
 * the cascaded pipeline built from the same engines. */
export const resume = (
  ctx: ConnectionContext,
  id: string,
  output: AudioOutputService,
  text?: TextOutputService,
  control: CallControlService = noCallControl
): Effect.Effect<Line, ResumeFailure, Scope.Scope | Transfer.Transferer> => open(ctx, output, text, control, id)

const open = (
  ctx: ConnectionContext,
  output: AudioOutputService,
  text: TextOutputService | undefined,
  control: CallControlService,
  resumeId: string | undefined
): Effect.Effect<Line, ResumeFailure, Scope.Scope | Transfer.Transferer> =>
  Effect.gen(function*() {
    const recorder = yield* record(ctx)
    const realtime = Option.isSome(yield* Effect.serviceOption(RealtimeModel))
    // Without a realtime model, VAD + STT + TTS engines in the context make a cascaded voice session.
    const voiceEngines = realtime ? Option.none() : yield* VoicePipeline.engines
    const transcriber = Option.isSome(voiceEngines)
      ? voiceEngines.value.stt
      : realtime
      ? Option.getOrUndefined(yield* Effect.serviceOption(Stt))
      : undefined
    const pipeline = Option.isSome(voiceEngines) ? yield* Queue.unbounded<VoiceInput.Input, Cause.Done>() : undefined
    const durable = ctx.durable
    // Runs after the session's own finalizers (registered before them): its journal is flushed.
    let ended = false
    let sessionId: string | undefined
    if (durable) yield* Effect.addFinalizer(() => !ended || sessionId === undefined ? Effect.void : endInStore(durable, sessionId))
    const durableOptions = durable
      // An id no other process of the fleet (or earlier run on the same store) gives.
      ? { store: durable.store, owner: durable.owner, userdataSchema: durable.userdataSchema, endOnClose: false, id: `session_${randomBytes(12).toString("base64url")}` }
      : {}
    const startOptions = { agent: ctx.agent, userdata: ctx.userdata(), ...durableOptions }
    const tap = ListenIn.make()
    const toCaller = recorder ? recorder.output(output) : output
    const provide = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      effect.pipe(
        Effect.provideService(AudioOutput, ListenIn.tapped(tap, toCaller)),
        // The agents' tools that hang up or press keys (CallTools) reach the transport through it.
        Effect.provideService(CallControl, control)
      )
    // A resumed session listens and speaks as a new one would: the same pipeline, the same engines.
    const resumeOptions = durable && resumeId !== undefined
      ? { id: resumeId, store: durable.store, agents: durable.agents, owner: durable.owner, userdataSchema: durable.userdataSchema, endOnClose: false }
      : undefined
    // With engines, the session is a voice pipeline's: built from them, fed the caller's audio.
    const voice = pipeline && Option.isSome(voiceEngines)
      ? {
        parts: { input: Stream.fromQueue(pipeline), ...(text ? { alsoText: text } : {}) },
        provide: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
          effect.pipe(VoicePipeline.provideEngines(voiceEngines.value), Effect.provideService(Resampler, ctx.resampler))
      }
      : undefined
    const textOnly = text ? { textOutput: text } : {}
    const session: AgentSession.AgentSession = resumeOptions
      ? yield* (voice
        ? voice.provide(VoicePipeline.resume({ ...resumeOptions, ...voice.parts })).pipe(Effect.map((started) => started.session))
        : AgentSession.resume({ ...resumeOptions, ...textOnly })).pipe(provide)
      : yield* (voice
        ? voice.provide(VoicePipeline.start({ ...startOptions, ...voice.parts })).pipe(Effect.map((started) => started.session))
        : AgentSession.start({ ...startOptions, ...textOnly })).pipe(
          provide,
          // The service is served with its agents' model (Run.ts): a MissingModel (or a store
          // that refuses a new session) is a defect of its setup, reported with its message.
          Effect.orDie
        )
    sessionId = session.id
    // To the model's rate, one stage per rate the caller's audio comes at.
    const toModel = new Map<number, ResamplerStage>()
    const quiet = realtime ? yield* realtimeQuiet(session, ctx.realtimeInputRate) : undefined
    const hear = (frame: AudioFrame.AudioFrame): Effect.Effect<void, RealtimeError | SessionClosed> =>
      Effect.gen(function*() {
        if (recorder) yield* recorder.user(frame)
        ListenIn.hear(tap, "caller", frame)
        if (pipeline) {
          yield* Queue.offer(pipeline, frame)
          return
        }
        if (!realtime) return
        const stage = toModel.get(frame.sampleRate) ?? (yield* ctx.resampler.make(frame.sampleRate, ctx.realtimeInputRate))
        toModel.set(frame.sampleRate, stage)
        for (const out of stage.push(frame)) yield* session.pushAudio(AudioFrame.toPcm16(out))
        if (quiet) yield* quiet.heard
      })
    const endAudio = pipeline ? Queue.offer(pipeline, VoiceInput.audioEnd).pipe(Effect.asVoid) : quiet ? quiet.stopped : Effect.void
    return {
      session,
      audio: realtime ? "realtime" : pipeline ? "pipeline" : "none",
      hear,
      endAudio,
      markEnded: () => void (ended = true),
      tap,
      speak: (frame, who) => toCaller.write(AudioFrame.toPcm16(frame), frame.sampleRate, { speechId: `voice_${who}`, agent: who }),
      transcriber
    }
  })

/**
 * Marks a session ended in the store once its call ended here, so no token resumes it anywhere:
 * only while this process is still its writer (another node that claimed it keeps it live).
 */
const endInStore = (durable: DurableSessions, id: string) =>
  Effect.gen(function*() {
    const stored = yield* durable.store.load(id)
    if (Option.isNone(stored) || stored.value.meta.owner !== durable.owner || stored.value.meta.status !== "live") return
    const { claim } = yield* durable.store.claim(id, durable.owner)
    yield* durable.store.end(claim)
  }).pipe(Effect.ignore)

/** With a record directory: `<dir>/call-<time>-<n>.agent.wav` and `.user.wav` for this line. */
let recordings = 0
const record = (ctx: ConnectionContext) =>
  Option.match(ctx.options.recordDir, {
    onNone: () => Effect.succeed(undefined),
    onSome: (dir) =>
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        yield* fs.makeDirectory(dir, { recursive: true }).pipe(Effect.ignore)
        const stamp = new Date(yield* Clock.currentTimeMillis).toISOString().replace(/[:.]/g, "-")
        return yield* AudioRecorder.make(`${dir.replace(/\/+$/, "")}/call-${stamp}-${++recordings}`)
      }).pipe(Effect.provide(NodeFileSystem.layer))
  })
