/**
 * The `Room` service on `@livekit/rtc-node`'s `Room`: connect with the job's token, find the
 * user (the first remote participant that is not an agent), subscribe to their microphone,
 * publish the agent's, chat on `lk.chat`, transcripts with `sendText`, state in attributes. Kept
 * thin: everything it does not do itself (the audio frames, the session, the worker) is tested
 * offline; `Room.connect` needs a LiveKit server (`livekit-server --dev`, see docs/livekit.md).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Deferred, Effect, Layer, Queue, Redacted, Stream } from "effect"
import { RtcNode } from "../rtc/RtcNode.ts"
import { Room, type RoomConnection, type RoomData, RoomError, type RoomParticipant } from "./Room.ts"
import * as RtcAudio from "./RtcAudio.ts"

/**
 * `Room` over `@livekit/rtc-node`: joins the job's room with its token and leaves it when the
 * Scope closes. Needs `RtcNode`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Room, never, RtcNode> = Layer.effect(
  Room,
  Effect.gen(function*() {
    const rtc = yield* RtcNode
    const join = (url: string, token: Redacted.Redacted<string>) =>
      Effect.gen(function*() {
        const room = new rtc.Room()
        yield* Effect.acquireRelease(
          Effect.tryPromise({
            try: () => room.connect(url, Redacted.value(token), { autoSubscribe: true, dynacast: false }),
            catch: (e) => new RoomError({ message: `cannot join the room at ${url}: ${(e as Error).message}` })
          }),
          () =>
            Effect.tryPromise({ try: () => room.disconnect(), catch: (e) => RtcAudio.rtcError(`cannot leave the room at ${url} cleanly`, e) }).pipe(
              Effect.catch((error) => Effect.logWarning(error.message))
            )
        )
        // rtc-node's failures on this connection: the job ends with the first (`failure`)
        const failed = yield* Deferred.make<never, RoomError>()
        const user = yield* Deferred.make<RoomParticipant>()
        const gone = new Map<string, Deferred.Deferred<void>>()
        const goneOf = (identity: string) => {
          let d = gone.get(identity)
          if (!d) gone.set(identity, d = Deferred.makeUnsafe<void>())
          return d
        }
        const tracks = new Map<string, Deferred.Deferred<InstanceType<typeof rtc.RemoteAudioTrack>>>()
        const trackOf = (identity: string) => {
          let d = tracks.get(identity)
          if (!d) tracks.set(identity, d = Deferred.makeUnsafe())
          return d
        }
        const chat = yield* Queue.unbounded<string>()
        const keys = yield* Queue.unbounded<{ readonly identity: string; readonly digit: string }>()
        // the user is the first participant that is not an agent (other workers may share the room)
        const isUser = (p: { readonly kind: unknown }) => p.kind !== rtc.ParticipantKind.AGENT
        const participantOf = (p: { readonly identity: string; readonly name?: string | undefined; readonly kind: unknown; readonly attributes: Record<string, string> }): RoomParticipant => ({
          identity: p.identity,
          name: p.name ?? p.identity,
          sip: p.kind === rtc.ParticipantKind.SIP,
          attributes: { ...p.attributes }
        })
        const found = (p: Parameters<typeof participantOf>[0]) => Deferred.doneUnsafe(user, Effect.succeed(participantOf(p)))
        for (const p of room.remoteParticipants.values()) if (isUser(p)) found(p)
        room.on(rtc.RoomEvent.ParticipantConnected, (p) => isUser(p) && found(p))
        room.on(rtc.RoomEvent.ParticipantDisconnected, (p) => Deferred.doneUnsafe(goneOf(p.identity), Effect.void))
        room.on(rtc.RoomEvent.Disconnected, () => {
          for (const d of gone.values()) Deferred.doneUnsafe(d, Effect.void)
        })
        room.on(rtc.RoomEvent.TrackSubscribed, (track, _publication, p) => {
          if (track.kind === rtc.TrackKind.KIND_AUDIO) Deferred.doneUnsafe(trackOf(p.identity), Effect.succeed(track as InstanceType<typeof rtc.RemoteAudioTrack>))
        })
        room.on(rtc.RoomEvent.DtmfReceived, (_code, digit, p) => Queue.offerUnsafe(keys, { identity: p.identity, digit }))
        // Data messages by topic, each with its sender as it is when it arrives (its attributes now).
        const data = new Map<string, Queue.Queue<RoomData>>()
        const dataQueue = (topic: string) => {
          let q = data.get(topic)
          if (!q) data.set(topic, q = Effect.runSync(Queue.unbounded<RoomData>()))
          return q
        }
        room.on(rtc.RoomEvent.DataReceived, (payload, p, _kind, topic) => {
          if (p === undefined || topic === undefined || !data.has(topic)) return
          Queue.offerUnsafe(dataQueue(topic), { from: participantOf(p), payload: new TextDecoder().decode(payload) })
        })
        // a chat message that does not arrive whole is dropped (a rejection here would be unhandled)
        room.registerTextStreamHandler("lk.chat", (reader) => void reader.readAll().then((text) => Queue.offerUnsafe(chat, text), () => undefined))

        const local = () => room.localParticipant!
        const connection: RoomConnection = {
          name: room.name ?? "",
          participant: Deferred.await(user),
          audioOf: (p, sampleRate) =>
            Stream.unwrap(Deferred.await(trackOf(p.identity)).pipe(Effect.map((track) => RtcAudio.framesOf(rtc, track, sampleRate, failed)))).pipe(
              Stream.interruptWhen(Deferred.await(goneOf(p.identity)))
            ),
          textOf: () => Stream.fromQueue(chat),
          // The tone's RFC 4733 event code with its digit, as rtc-node's publishDtmf takes them.
          publishDtmf: (digit) =>
            Effect.tryPromise({
              try: () => local().publishDtmf(digit === "*" ? 10 : digit === "#" ? 11 : Number(digit), digit),
              catch: (e) => RtcAudio.rtcError(`cannot send the DTMF tone ${digit}`, e)
            }),
          dataOf: (topic) => Stream.fromQueue(dataQueue(topic)),
          sendData: (payload, options) =>
            Effect.tryPromise({
              try: () => local().publishData(new TextEncoder().encode(payload), { reliable: true, topic: options.topic, destination_identities: [...options.to] }),
              catch: (e) => RtcAudio.rtcError(`cannot send data on ${options.topic}`, e)
            }).pipe(Effect.catch((error) => Effect.logWarning(error.message))),
          keypadOf: (p) => Stream.fromQueue(keys).pipe(Stream.filter((key) => key.identity === p.identity), Stream.map((key) => key.digit)),
          publishAudio: (sampleRate) =>
            Effect.gen(function*() {
              const { audioSource, output } = RtcAudio.source(rtc, sampleRate, failed)
              const track = rtc.LocalAudioTrack.createAudioTrack("agent", audioSource)
              const options = new rtc.TrackPublishOptions({ source: rtc.TrackSource.SOURCE_MICROPHONE })
              yield* Effect.tryPromise({
                try: () => local().publishTrack(track, options),
                catch: (e) => new RoomError({ message: `cannot publish the agent's track: ${(e as Error).message}` })
              })
              yield* Effect.addFinalizer(() => RtcAudio.closeTrack(track))
              return output
            }),
          // A transcript or a state the room did not take is lost, not fatal: logged, the job goes on.
          sendText: (text, options) =>
            Effect.tryPromise({
              try: () => local().sendText(text, { topic: options.topic, ...(options.attributes ? { attributes: options.attributes } : {}) }),
              catch: (e) => RtcAudio.rtcError(`cannot send text on ${options.topic}`, e)
            }).pipe(Effect.asVoid, Effect.catch((error) => Effect.logWarning(error.message))),
          setAttributes: (attributes) =>
            Effect.tryPromise({ try: () => local().setAttributes(attributes), catch: (e) => RtcAudio.rtcError("cannot set the agent's attributes", e) }).pipe(
              Effect.catch((error) => Effect.logWarning(error.message))
            ),
          left: (p) => Deferred.await(goneOf(p.identity)),
          failure: Deferred.await(failed)
        }
        return connection
      })
    return { join }
  })
)
