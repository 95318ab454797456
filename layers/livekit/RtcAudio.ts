/**
 * Audio between baton and `@livekit/rtc-node`: frames of a track as a Stream, and an
 * `AudioOutput` playing into an `AudioSource`. rtc-node's `AudioSource` queues up to a second
 * and paces playout itself; `clear` drops what is queued (a barge-in).
 */
import { Effect, Stream } from "effect"
import * as AudioFrame from "../../services/AudioFrame.ts"
import type { AudioOutputService } from "../../services/AudioOutput.ts"
import type { RtcNodeModule } from "../rtc/RtcNode.ts"

type Rtc = RtcNodeModule
type Track = InstanceType<Rtc["LocalAudioTrack"]> | InstanceType<Rtc["RemoteAudioTrack"]>

/** The frames of `track` at `sampleRate` mono. rtc-node's stream never ends on its own: it stops when the Scope closes. */
export const framesOf = (rtc: Rtc, track: Track, sampleRate: number): Stream.Stream<AudioFrame.AudioFrame> =>
  Stream.fromAsyncIterable(
    new rtc.AudioStream(track, { sampleRate, numChannels: 1 }) as AsyncIterable<InstanceType<Rtc["AudioFrame"]>>,
    () => undefined
  ).pipe(
    Stream.orDie,
    Stream.map((frame) => AudioFrame.make(frame.data, frame.sampleRate, frame.channels))
  )

/** An `AudioSource` at `sampleRate` and an output that plays into it. */
export const source = (rtc: Rtc, sampleRate: number) => {
  const audioSource = new rtc.AudioSource(sampleRate, 1)
  const output: AudioOutputService = {
    write: (pcm, rate) =>
      Effect.promise(() => {
        // a copy: rtc-node reads the frame's whole buffer, not the view's window of it
        const samples = AudioFrame.fromPcm16(pcm, rate).data.slice()
        return audioSource.captureFrame(new rtc.AudioFrame(samples, rate, 1, samples.length))
      }),
    clear: () => Effect.sync(() => audioSource.clearQueue())
  }
  return { audioSource, output }
}
