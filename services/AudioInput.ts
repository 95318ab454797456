/**
 * Where the user's audio comes from: a WebSocket client, a phone bridge, a LiveKit track, a WAV
 * file in a test. A transport provides one per session; the voice pipeline (or a realtime model)
 * reads it. Frames arrive at the transport's own rate; readers resample.
 */
import { type Cause, Context, Effect, Queue, Stream } from "effect"
import type { AudioFrame } from "./AudioFrame.ts"

export interface AudioInputService {
  /** The user's audio in order; ends when the transport closes. */
  readonly frames: Stream.Stream<AudioFrame>
}

export class AudioInput extends Context.Service<AudioInput, AudioInputService>()("baton/AudioInput") {}

/** An input fed by hand: the transport offers frames and ends it with `end`. */
export interface AudioInputQueue {
  readonly service: AudioInputService
  readonly offer: (frame: AudioFrame) => Effect.Effect<void>
  readonly end: Effect.Effect<void>
}

export const makeQueue: Effect.Effect<AudioInputQueue> = Effect.gen(function*() {
  const queue = yield* Queue.unbounded<AudioFrame, Cause.Done>()
  return {
    service: { frames: Stream.fromQueue(queue) },
    offer: (frame) => Queue.offer(queue, frame).pipe(Effect.asVoid),
    end: Queue.end(queue).pipe(Effect.asVoid)
  }
})
