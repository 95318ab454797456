/**
 * Rooms in memory (no audio, no server): each job's room has one user who types in the chat (or presses keys),
 * and records what the agent sent and set. For the worker's tests and its many-jobs bench; the
 * audio path is tested through rtc-node's loopback (LoopbackRoom).
 */
import { Deferred, Effect, Layer, Queue, Redacted, Stream } from "effect"
import { Room, type RoomConnection, type RoomParticipant } from "../../../layers/livekit/Room.ts"

export interface MemoryRoomState {
  readonly name: string
  readonly texts: Array<{ readonly topic: string; readonly text: string; readonly attributes: Record<string, string> | undefined }>
  readonly attributes: Record<string, string>
  readonly chat: (text: string) => Effect.Effect<void>
  /** The user presses a key on the phone's keypad (a SIP caller). */
  readonly press: (digit: string) => Effect.Effect<void>
  readonly leave: Effect.Effect<void>
  /** Whether the agent is still in the room. */
  joined: boolean
}

const user: RoomParticipant = { identity: "user", name: "User" }

/** The room a join token is for (its `video.room` claim; the server checked the signature). */
const roomOf = (token: string): string => {
  const payload = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as { video?: { room?: string } }
  return payload.video?.room ?? "?"
}

/** Rooms whose user is `participant` (a SIP caller, for transfers). */
export const makeWith = (options: { readonly participant?: RoomParticipant }) => Effect.gen(function*() {
  const caller = options.participant ?? user
  const rooms = new Map<string, MemoryRoomState>()
  const join = (_url: string, token: Redacted.Redacted<string>) =>
    Effect.gen(function*() {
      const name = roomOf(Redacted.value(token))
      const chat = yield* Queue.unbounded<string>()
      const keys = yield* Queue.unbounded<string>()
      const gone = yield* Deferred.make<void>()
      const state: MemoryRoomState = {
        name,
        texts: [],
        attributes: {},
        chat: (text) => Queue.offer(chat, text).pipe(Effect.asVoid),
        press: (digit) => Queue.offer(keys, digit).pipe(Effect.asVoid),
        leave: Deferred.succeed(gone, undefined).pipe(Effect.asVoid),
        joined: true
      }
      rooms.set(name, state)
      yield* Effect.addFinalizer(() => Effect.sync(() => void (state.joined = false)))
      const connection: RoomConnection = {
        name,
        participant: Effect.succeed(caller),
        audioOf: () => Stream.never,
        textOf: () => Stream.fromQueue(chat),
        keypadOf: () => Stream.fromQueue(keys),
        publishAudio: () => Effect.succeed({ write: () => Effect.void, clear: () => Effect.void }),
        sendText: (text, options) => Effect.sync(() => void state.texts.push({ topic: options.topic, text, attributes: options.attributes })),
        setAttributes: (next) => Effect.sync(() => void Object.assign(state.attributes, next)),
        left: () => Deferred.await(gone),
        failure: Effect.never
      }
      return connection
    })
  return { layer: Layer.succeed(Room, { join }), rooms }
})

export const make = makeWith({})
