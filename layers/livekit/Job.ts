/**
 * One job: a session in a room, in its own Scope (the worker runs thousands side by side on
 * fibers). It joins with the job's token, waits for the user, publishes the agent's audio track
 * and runs one `AgentSession`: through the cascaded voice pipeline when the context has VAD, STT
 * and TTS engines, through a realtime model's own audio when it has a `RealtimeModel`, else in
 * text over the room's chat (a SIP caller's keypad presses become turns too). Transcripts go to the room on `lk.transcription` and the agent's
 * state to its `lk.agent.state` attribute, as LiveKit clients expect. The user leaving ends the
 * session; the job's termination closes its Scope; the room failing under it (`RoomConnection.failure`)
 * fails the job with that `RoomError`. With `durable`, the session is journaled under (room, agent
 * name) and a job dispatched again for the room (its worker died) resumes it.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Option, type Redacted, Result, type Schema, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { AudioOutput } from "../../services/AudioOutput.ts"
import { CallControl, CallControlError, type CallControlService, noDtmf } from "../../services/CallControl.ts"
import { RealtimeModel } from "../../services/RealtimeModel.ts"
import type { SessionStoreService } from "../../services/SessionStore.ts"
import { type Agent, AgentSession } from "../../src/index.ts"
import * as Transfer from "../../src/Transfer.ts"
import * as Dtmf from "../../src/voice/Dtmf.ts"
import * as VoicePipeline from "../../src/voice/VoicePipeline.ts"
import { Room, type RoomConnection, type RoomParticipant } from "./Room.ts"
import * as SipTransfer from "./SipTransfer.ts"
import * as Supervisor from "./Supervisor.ts"

/**
 * A job from LiveKit's dispatch: its id, the room, the server URL and the participant token.
 *
 * @since 0.1.0
 * @category models
 */
export interface JobSpec {
  readonly id: string
  readonly roomName: string
  /** The agent name it was dispatched to (with the room, what finds its session in a store). */
  readonly agentName?: string | undefined
  readonly url: string
  readonly token: Redacted.Redacted<string>
  /** The server's API key and secret (the worker's): what a LiveKit SIP transfer is made with. */
  readonly api?: { readonly apiKey: string; readonly apiSecret: Redacted.Redacted<string> } | undefined
}

/**
 * What a job runs: the entry agent, per-session userdata and the realtime model's input rate.
 *
 * @since 0.1.0
 * @category models
 */
export interface JobOptions {
  /** The entry agent; its tools may hang up or press keys in the room (`CallControl`) and
   * transfer a SIP caller (`Transfer.cold`/`warm`: the job's `Transferer`). */
  readonly agent: Agent.Agent<CallControl | Transfer.Transferer>
  readonly userdata?: () => unknown
  /** The rate a realtime model takes the user's audio at (OpenAI 24 kHz, Gemini 16 kHz). */
  readonly realtimeInputRate?: number
  /**
   * Journals each room's session to a store under (room, agent name): a job dispatched again for
   * the same room (its worker died) resumes that session instead of starting over. Text and
   * realtime sessions (a cascaded voice pipeline starts a new session, not journaled).
   */
  readonly durable?: JobDurability | undefined
  /** LiveKit SIP transfers of a SIP caller: the API's host (default: the job's server URL over
   * http(s)), the outbound trunk a warm transfer dials through, the dial tone. */
  readonly sip?: { readonly host?: string; readonly outboundTrunkId?: string; readonly playDialtone?: boolean } | undefined
  /** The app's own transferer for the job's caller, instead of LiveKit SIP. */
  readonly transferer?: ((room: string, caller: RoomParticipant) => Transfer.TransfererService) | undefined
  /** A supervisor may take the call over and hand it back (Supervisor.ts); none unless given. */
  readonly supervisors?: Supervisor.SupervisorOptions<CallControl | Transfer.Transferer> | undefined
}

/**
 * Where a job's session is journaled, and what resuming it needs.
 *
 * @since 0.1.0
 * @category models
 */
export interface JobDurability {
  readonly store: SessionStoreService
  /** Every agent and task a session may run (found again by name; default: the entry agent). */
  readonly agents?: ReadonlyArray<Agent.Agent> | undefined
  /** The userdata's Schema, needed when `userdata` makes any. */
  readonly userdataSchema?: Schema.Codec<unknown, unknown> | undefined
  /** This worker as the sessions' writer (default: its process id). */
  readonly owner?: string | undefined
}

/**
 * The store key of a room's session: a re-dispatch of the room to the same agent name finds it.
 *
 * @since 0.1.0
 * @category utils
 */
export const sessionKey = (job: Pick<JobSpec, "roomName" | "agentName">): string => `livekit:${job.roomName}:${job.agentName ?? ""}`

/**
 * The room's live session in the store resumed, or (none there, or it cannot be resumed) a new
 * durable one under the room's key.
 */
const durableSession = (job: JobSpec, options: JobOptions, durable: JobDurability) =>
  Effect.gen(function*() {
    const key = sessionKey(job)
    const common = {
      store: durable.store,
      userdataSchema: durable.userdataSchema,
      ...(durable.owner ? { owner: durable.owner } : {})
    }
    const found = yield* durable.store.findByKey(key)
    if (Option.isSome(found)) {
      const resumed = yield* AgentSession.resume({ ...common, id: found.value.id, agents: durable.agents ?? [options.agent] }).pipe(Effect.result)
      if (Result.isSuccess(resumed)) {
        yield* Effect.logInfo(`livekit job ${job.id}: resumed session ${found.value.id} of room ${job.roomName}`)
        return resumed.success
      }
      yield* Effect.logWarning(`livekit job ${job.id}: session ${found.value.id} of room ${job.roomName} not resumed (${resumed.failure.message}): starting a new one`)
    }
    return yield* AgentSession.start({ ...common, agent: options.agent, userdata: options.userdata?.(), key })
  })

const REALTIME_OUTPUT_RATE = 24_000

/** The LiveKit server's API over http(s), from the job's ws(s):// URL. */
const apiHost = (url: string) => url.replace(/^ws(s?):\/\//, "http$1://")

/**
 * The job's `Transferer`: the app's, else LiveKit SIP for a SIP caller when the API's credentials
 * are known, else a `Failed` outcome saying what is missing.
 */
const transfererFor = (job: JobSpec, options: JobOptions, room: string, caller: RoomParticipant): Transfer.TransfererService => {
  if (options.transferer) return options.transferer(room, caller)
  const failed = (reason: string): Transfer.TransfererService => ({ transport: "livekit", transfer: () => Effect.succeed(Transfer.outcome("Failed", reason)) })
  if (!caller.sip) {
    return failed(`the caller ${caller.identity} did not join through LiveKit SIP: only a phone call can be transferred (give JobOptions.transferer for others)`)
  }
  if (!job.api) return failed("LiveKit SIP transfers use the server's API: set LIVEKIT_API_KEY and LIVEKIT_API_SECRET (the worker passes them to its jobs)")
  return SipTransfer.transferer({
    host: options.sip?.host ?? apiHost(job.url),
    apiKey: job.api.apiKey,
    apiSecret: job.api.apiSecret,
    roomName: room,
    participantIdentity: caller.identity,
    ...(options.sip?.outboundTrunkId !== undefined ? { outboundTrunkId: options.sip.outboundTrunkId } : {}),
    ...(options.sip?.playDialtone !== undefined ? { playDialtone: options.sip.playDialtone } : {})
  })
}

/** What the session says and does, as the room's clients read it. */
/**
 * The room as a call: hanging up closes the session, which ends the job and leaves the room;
 * keys are published as DTMF tones (a SIP caller's line hears them; `w` waits half a second).
 */
const callControl = (conn: RoomConnection, session: () => AgentSession.AgentSession | undefined): CallControlService => ({
  transport: "livekit",
  hangUp: () => Effect.suspend(() => session()?.close ?? Effect.void),
  sendDtmf: (digits) => {
    const publish = conn.publishDtmf
    if (!publish) return noDtmf("this LiveKit room")(digits)
    return Effect.forEach([...digits], (digit) =>
      digit === "w" || digit === "W"
        ? Effect.sleep(500)
        : publish(digit).pipe(Effect.mapError((e) => new CallControlError({ reason: "failed", message: e.message }))), { discard: true })
  }
})

const mirror = (session: AgentSession.AgentSession, conn: RoomConnection, user: RoomParticipant) =>
  session.events.pipe(
    Stream.runForEach((event) => {
      switch (event.type) {
        case "user_input_transcribed":
          return conn.sendText(event.transcript, {
            topic: "lk.transcription",
            attributes: { "lk.transcribed_participant": user.identity, "lk.transcription_final": String(event.final) }
          })
        case "conversation_item_added":
          return event.item._tag === "Message" && event.item.role === "assistant" && event.item.text !== ""
            ? conn.sendText(event.item.text, { topic: "lk.transcription", attributes: { "lk.agent": event.agent ?? "", "lk.transcription_final": "true" } })
            : Effect.void
        case "agent_state_changed":
          return conn.setAttributes({ "lk.agent.state": event.state, "lk.agent.name": event.agent })
        default:
          return Effect.void
      }
    })
  )

/**
 * Runs one job: joins its room, waits for the user and runs a session for them (the voice pipeline
 * when the context has its three engines, else the realtime model's audio, else text only), with
 * the room's chat and keypad as input, until they leave or the room fails. Needs `Room` and the
 * model layers.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = Effect.fn("LiveKit.job")(function*(job: JobSpec, options: JobOptions) {
  const room = yield* Room
  const conn = yield* room.join(job.url, job.token)
  const user = yield* conn.participant
  const start = { agent: options.agent, userdata: options.userdata?.() }
  const engines = yield* VoicePipeline.engines
  const realtime = yield* Effect.serviceOption(RealtimeModel)

  let session: AgentSession.AgentSession | undefined
  const control = callControl(conn, () => session)
  const transferer = transfererFor(job, options, conn.name || job.roomName, user)
  if (Option.isSome(engines)) {
    const output = yield* conn.publishAudio(engines.value.tts.sampleRate)
    const voice = yield* VoicePipeline.start({ ...start, input: conn.audioOf(user, engines.value.stt.sampleRate) }).pipe(
      VoicePipeline.provideEngines(engines.value),
      Effect.provideService(AudioOutput, output),
      Effect.provideService(CallControl, control),
      Effect.provideService(Transfer.Transferer, transferer)
    )
    session = voice.session
  } else if (Option.isSome(realtime)) {
    const output = yield* conn.publishAudio(REALTIME_OUTPUT_RATE)
    session = yield* (options.durable ? durableSession(job, options, options.durable) : AgentSession.start(start)).pipe(
      Effect.provideService(AudioOutput, output),
      Effect.provideService(CallControl, control),
      Effect.provideService(Transfer.Transferer, transferer)
    )
    const live = session
    yield* conn.audioOf(user, options.realtimeInputRate ?? REALTIME_OUTPUT_RATE).pipe(
      Stream.runForEach((frame) => live.pushAudio(AudioFrame.toPcm16(frame)).pipe(Effect.ignore)),
      Effect.forkScoped
    )
  } else {
    session = yield* (options.durable ? durableSession(job, options, options.durable) : AgentSession.start(start)).pipe(
      Effect.provideService(CallControl, control),
      Effect.provideService(Transfer.Transferer, transferer)
    )
  }
  const live = session
  yield* conn.textOf(user).pipe(Stream.runForEach((text) => live.send(text).pipe(Effect.ignore)), Effect.forkScoped)
  // A phone caller's keypad (LiveKit SIP), gathered into turns.
  const keypad = yield* Dtmf.collector((text) => live.send(text).pipe(Effect.ignore))
  yield* conn.keypadOf(user).pipe(Stream.runForEach(keypad.press), Effect.forkScoped)
  yield* mirror(live, conn, user).pipe(Effect.forkScoped)
  if (options.supervisors) yield* Supervisor.serve(conn, live, options.agent, options.supervisors)
  // the user leaving ends the session; the job's Scope closing (termination) ends it too; the
  // room failing under it (an rtc-node call rejected) ends it with that RoomError
  yield* Effect.raceFirst(Effect.raceFirst(conn.left(user), live.awaitClosed), conn.failure).pipe(Effect.ensuring(live.close))
})
