/**
 * A LiveKit room as the agent sees it, kept small so that the part which needs a LiveKit server
 * (`RtcRoom.ts`, on `@livekit/rtc-node`'s `Room`) is thin and the rest runs offline: the job
 * logic, the worker, and the audio path through rtc-node's own audio classes (`LoopbackRoom.ts`).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context, Data, type Effect, type Redacted, type Scope, type Stream } from "effect"
import type { AudioFrame } from "../../services/AudioFrame.ts"
import type { AudioOutputService } from "../../services/AudioOutput.ts"

/**
 * Joining a room or waiting in it failed; the message says what.
 *
 * @since 0.1.0
 * @category errors
 */
export class RoomError extends Data.TaggedError("RoomError")<{ readonly message: string }> {}

/**
 * A participant in a room: identity and name, whether they joined through LiveKit SIP (a phone
 * caller), and their attributes when they sent what is being handled.
 *
 * @since 0.1.0
 * @category models
 */
export interface RoomParticipant {
  readonly identity: string
  readonly name: string
  /** Joined through LiveKit SIP: a phone call, which `SipTransfer` can transfer. */
  readonly sip?: boolean | undefined
  readonly attributes?: Readonly<Record<string, string>> | undefined
}

/**
 * A data message of a participant on a topic.
 *
 * @since 0.1.0
 * @category models
 */
export interface RoomData {
  readonly from: RoomParticipant
  readonly payload: string
}

/**
 * A joined room: the user's arrival, their audio and chat, and the agent's audio and text out.
 *
 * @since 0.1.0
 * @category models
 */
export interface RoomConnection {
  readonly name: string
  /** The first remote participant (the user), waiting for one to join. */
  readonly participant: Effect.Effect<RoomParticipant, RoomError>
  /** The participant's microphone as mono frames at `sampleRate`; ends when they leave. */
  readonly audioOf: (participant: RoomParticipant, sampleRate: number) => Stream.Stream<AudioFrame>
  /** Chat text the participant sends (topic `lk.chat`). */
  readonly textOf: (participant: RoomParticipant) => Stream.Stream<string>
  /** Keypad presses (DTMF) of the participant: a phone caller joined through LiveKit SIP. */
  readonly keypadOf: (participant: RoomParticipant) => Stream.Stream<string>
  /** Publishes the agent's microphone track at `sampleRate`: an `AudioOutput` that plays into it. */
  readonly publishAudio: (sampleRate: number) => Effect.Effect<AudioOutputService, RoomError, Scope.Scope>
  /** Sends text on a topic (`lk.transcription` for transcripts, as LiveKit clients expect). */
  readonly sendText: (text: string, options: { readonly topic: string; readonly attributes?: Record<string, string> }) => Effect.Effect<void>
  /** Sets the agent participant's attributes (`lk.agent.state`: listening, thinking, speaking). */
  readonly setAttributes: (attributes: Record<string, string>) => Effect.Effect<void>
  /** Completes when the participant has left (or the room is gone). */
  readonly left: (participant: RoomParticipant) => Effect.Effect<void>
  /** Sends one keypad tone (`0`-`9`, `*`, `#`) into the room: a SIP participant's line hears it. */
  readonly publishDtmf?: ((digit: string) => Effect.Effect<void, RoomError>) | undefined
  /** Data messages on `topic` from any participant (a supervisor's commands, Supervisor.ts). */
  readonly dataOf?: ((topic: string) => Stream.Stream<RoomData>) | undefined
  /** Sends a data message on `topic` to the participants named (reliable). */
  readonly sendData?: ((payload: string, options: { readonly topic: string; readonly to: ReadonlyArray<string> }) => Effect.Effect<void>) | undefined
  /**
   * Fails when the room can no longer carry the job's audio (an rtc-node call rejected: the
   * agent's frames could not be played, the user's could not be read). The job ends with this
   * error, which the worker reports as the job's failure; it never completes otherwise.
   */
  readonly failure: Effect.Effect<never, RoomError>
}

/**
 * Joins rooms.
 *
 * @since 0.1.0
 * @category models
 */
export interface RoomService {
  /** Joins the room a job names, with the token the dispatch gave; leaves when the Scope closes. */
  readonly join: (url: string, token: Redacted.Redacted<string>) => Effect.Effect<RoomConnection, RoomError, Scope.Scope>
}

/**
 * LiveKit rooms, as the worker's jobs use them. `RtcRoom.layer` joins real rooms through rtc-node;
 * `LoopbackRoom` runs one offline.
 *
 * @since 0.1.0
 * @category services
 */
export class Room extends Context.Service<Room, RoomService>()("baton/livekit/Room") {}
