/**
 * Audio between baton and `@livekit/rtc-node`: frames of a track as a Stream, and an
 * `AudioOutput` playing into an `AudioSource`. rtc-node's `AudioSource` queues up to a second
 * and paces playout itself; `clear` drops what is queued (a barge-in).
 *
 * rtc-node's calls can fail (a closed source, a track gone with its room): neither side turns
 * that into a defect. The failure goes to the connection's `failed` Deferred as a `RoomError`,
 * which ends the job with it (`RoomConnection.failure`); the stream ends, the frame is dropped.
 */
import { Deferred, Effect, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import type { AudioOutputService } from "../../services/AudioOutput.ts"
import type { RtcNodeModule } from "../rtc/RtcNode.ts"
import { RoomError } from "./Room.ts"

type Rtc = RtcNodeModule
type Track = InstanceType<Rtc["LocalAudioTrack"]> | InstanceType<Rtc["RemoteAudioTrack"]>

/** Where the rtc-node failures of one connection go: the job fails with the first. */
export type Failed = Deferred.Deferred<never, RoomError>

const reason = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** The error of a rejected rtc-node call: what failed, why, and what to check when it keeps happening. */
export const rtcError = (what: string, e: unknown): RoomError =>
  new RoomError({
    message: `${what}: ${reason(e)} (a call into @livekit/rtc-node failed; the room or track may be gone. ` +
      `If it happens to every job, reinstall rtc-node for this platform: npm install @livekit/rtc-node)`
  })

/**
 * The frames of `track` at `sampleRate` mono. rtc-node's stream never ends on its own: it stops
 * when the Scope closes, or when reading fails (the failure goes to `failed`).
 */
export const framesOf = (rtc: Rtc, track: Track, sampleRate: number, failed: Failed): Stream.Stream<AudioFrame.AudioFrame> =>
  Stream.fromAsyncIterable(
    new rtc.AudioStream(track, { sampleRate, numChannels: 1 }) as AsyncIterable<InstanceType<Rtc["AudioFrame"]>>,
    (e) => rtcError("cannot read the participant's audio track", e)
  ).pipe(
    Stream.catch((error) => Stream.fromEffectDrain(Deferred.fail(failed, error))),
    Stream.map((frame) => AudioFrame.make(frame.data, frame.sampleRate, frame.channels))
  )

/** An `AudioSource` at `sampleRate` and an output that plays into it. */
export const source = (rtc: Rtc, sampleRate: number, failed: Failed) => {
  const audioSource = new rtc.AudioSource(sampleRate, 1)
  const output: AudioOutputService = {
    write: (pcm, rate) =>
      Effect.tryPromise({
        try: () => {
          // a copy: rtc-node reads the frame's whole buffer, not the view's window of it
          const samples = AudioFrame.fromPcm16(pcm, rate).data.slice()
          return audioSource.captureFrame(new rtc.AudioFrame(samples, rate, 1, samples.length))
        },
        catch: (e) => rtcError("cannot play the agent's audio into its LiveKit track", e)
      }).pipe(Effect.catch((error) => Deferred.fail(failed, error))),
    clear: () => Effect.sync(() => audioSource.clearQueue())
  }
  return { audioSource, output }
}

/** Closes a track the agent published; a close that fails is logged (the track is gone either way). */
export const closeTrack = (track: { close: () => Promise<void> }) =>
  Effect.tryPromise({ try: () => track.close(), catch: (e) => rtcError("cannot close the agent's track", e) }).pipe(
    Effect.catch((error) => Effect.logWarning(error.message))
  )
