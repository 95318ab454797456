/**
 * A room without a server, for tests and local runs: one participant whose microphone is an
 * rtc-node `AudioSource` → `LocalAudioTrack` → `AudioStream` loopback, and the agent's published
 * track read back the same way. The audio path is rtc-node's own; only `Room.connect` is left out.
 *
 * ```ts
 * const room = yield* LoopbackRoom.make()
 * yield* room.say(frames)           // the participant speaks
 * const heard = room.agentAudio     // what the agent published
 * ```
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Deferred, Effect, Layer, Queue, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import { RtcNode } from "../rtc/RtcNode.ts"
import { Room, type RoomConnection, type RoomData, type RoomError, type RoomParticipant } from "./Room.ts"
import * as RtcAudio from "./RtcAudio.ts"

/**
 * An offline room for tests and demos: its `Room` layer, and a participant that speaks frames,
 * types in the chat, presses keys and leaves.
 *
 * @since 0.1.0
 * @category models
 */
export interface Loopback {
  /** Provides `Room`: every join is this one room. */
  readonly layer: Layer.Layer<Room>
  /** The participant speaks these frames (16 kHz mono), paced by rtc-node; fails when rtc-node refuses one. */
  readonly speak: (frames: ReadonlyArray<AudioFrame.AudioFrame>) => Effect.Effect<void, RoomError>
  /** The participant types in the chat. */
  readonly chat: (text: string) => Effect.Effect<void>
  /** The participant presses a key on the phone's keypad (DTMF). */
  readonly press: (digit: string) => Effect.Effect<void>
  /** The participant leaves. */
  readonly leave: Effect.Effect<void>
  /** The agent's published audio, read back at 16 kHz (it never ends: take what you need). */
  readonly agentAudio: Effect.Effect<Stream.Stream<AudioFrame.AudioFrame>>
  /** What the agent sent as text, by topic, and its attributes. */
  readonly texts: ReadonlyArray<{ readonly topic: string; readonly text: string }>
  readonly attributes: Readonly<Record<string, string>>
  /** The keypad tones the agent sent (`CallTools.sendDtmf`), in order. */
  readonly tones: ReadonlyArray<string>
  /** Another participant (a supervisor) sends a data message on a topic. */
  readonly sendData: (from: RoomParticipant, topic: string, payload: string) => Effect.Effect<void>
  /** The data messages the agent sent, in order. */
  readonly data: ReadonlyArray<{ readonly topic: string; readonly payload: string; readonly to: ReadonlyArray<string> }>
}

/**
 * Options of `make`: who the participant is (default `user`, not a SIP caller).
 *
 * @since 0.1.0
 * @category models
 */
export interface LoopbackOptions {
  readonly participant?: RoomParticipant | undefined
}

const RATE = 16000
const defaultUser: RoomParticipant = { identity: "user", name: "User" }

/**
 * Makes a loopback room over rtc-node (no LiveKit server): the agent's side joins it as it would a
 * real room. Needs `RtcNode`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("LoopbackRoom.make")(function*(options: LoopbackOptions = {}) {
  const rtc = yield* RtcNode
  const user = options.participant ?? defaultUser
  const dataIn = new Map<string, Queue.Queue<RoomData>>()
  const dataQueue = (topic: string) => {
    let q = dataIn.get(topic)
    if (!q) dataIn.set(topic, q = Effect.runSync(Queue.unbounded<RoomData>()))
    return q
  }
  const data: Array<{ topic: string; payload: string; to: ReadonlyArray<string> }> = []
  const failed = yield* Deferred.make<never, RoomError>()
  const mic = RtcAudio.source(rtc, RATE, failed)
  const micTrack = rtc.LocalAudioTrack.createAudioTrack("user-mic", mic.audioSource)
  const chat = yield* Queue.unbounded<string>()
  const keys = yield* Queue.unbounded<string>()
  const gone = yield* Deferred.make<void>()
  const published = yield* Deferred.make<InstanceType<typeof rtc.LocalAudioTrack>>()
  const texts: Array<{ topic: string; text: string }> = []
  const attributes: Record<string, string> = {}
  /** The keypad tones the agent sent into the room, in order. */
  const tones: Array<string> = []

  const connection: RoomConnection = {
    name: "loopback",
    participant: Effect.succeed(user),
    audioOf: (_participant, sampleRate) => RtcAudio.framesOf(rtc, micTrack, sampleRate, failed).pipe(Stream.interruptWhen(Deferred.await(gone))),
    textOf: () => Stream.fromQueue(chat).pipe(Stream.interruptWhen(Deferred.await(gone))),
    keypadOf: () => Stream.fromQueue(keys).pipe(Stream.interruptWhen(Deferred.await(gone))),
    publishAudio: (sampleRate) =>
      Effect.gen(function*() {
        const agent = RtcAudio.source(rtc, sampleRate, failed)
        const track = rtc.LocalAudioTrack.createAudioTrack("agent-mic", agent.audioSource)
        yield* Effect.addFinalizer(() => RtcAudio.closeTrack(track))
        yield* Deferred.succeed(published, track)
        return agent.output
      }),
    sendText: (text, options) => Effect.sync(() => void texts.push({ topic: options.topic, text })),
    setAttributes: (next) => Effect.sync(() => void Object.assign(attributes, next)),
    left: () => Deferred.await(gone),
    publishDtmf: (digit) => Effect.sync(() => void tones.push(digit)),
    dataOf: (topic) => Stream.fromQueue(dataQueue(topic)),
    sendData: (payload, options) => Effect.sync(() => void data.push({ topic: options.topic, payload, to: options.to })),
    failure: Deferred.await(failed)
  }

  return {
    layer: Layer.succeed(Room, { join: () => Effect.succeed(connection) }),
    speak: (frames) =>
      Effect.forEach(frames, (frame) =>
        // a copy: rtc-node reads the frame's whole buffer, not the view's window of it
        Effect.tryPromise({
          try: () => mic.audioSource.captureFrame(new rtc.AudioFrame(frame.data.slice(), frame.sampleRate, 1, frame.data.length)),
          catch: (e) => RtcAudio.rtcError("cannot speak into the loopback microphone", e)
        }), { discard: true }),
    chat: (text) => Queue.offer(chat, text).pipe(Effect.asVoid),
    press: (digit) => Queue.offer(keys, digit).pipe(Effect.asVoid),
    leave: Deferred.succeed(gone, undefined).pipe(Effect.asVoid),
    agentAudio: Deferred.await(published).pipe(Effect.map((track) => RtcAudio.framesOf(rtc, track, RATE, failed))),
    texts,
    attributes,
    tones,
    sendData: (from, topic, payload) => Queue.offer(dataQueue(topic), { from, payload }).pipe(Effect.asVoid),
    data
  } satisfies Loopback
})

