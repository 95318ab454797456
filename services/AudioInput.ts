/**
 * Where the user's audio comes from: a WebSocket client, a phone bridge, a LiveKit track, a WAV
 * file in a test. A transport provides one per session; the voice pipeline (or a realtime model)
 * reads it. Frames arrive at the transport's own rate; readers resample.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { type Cause, Context, Effect, Queue, Stream } from "effect"
import type { AudioFrame } from "./AudioFrame.ts"

/**
 * The user's audio: a stream of frames that ends when the transport closes.
 *
 * @since 0.1.0
 * @category models
 */
export interface AudioInputService {
  /** The user's audio in order; ends when the transport closes. */
  readonly frames: Stream.Stream<AudioFrame>
}

/**
 * The user's audio in, provided by a transport (a WebSocket client, a phone bridge, a LiveKit
 * track). The voice pipeline reads it when no `input` stream is given.
 *
 * @since 0.1.0
 * @category services
 */
export class AudioInput extends Context.Service<AudioInput, AudioInputService>()("baton/AudioInput") {}

/**
 * An input fed by hand: the transport offers frames and ends it with `end`.
 *
 * @since 0.1.0
 * @category models
 */
export interface AudioInputQueue {
  readonly service: AudioInputService
  readonly offer: (frame: AudioFrame) => Effect.Effect<void>
  readonly end: Effect.Effect<void>
}

/**
 * An `AudioInput` fed by hand: offer frames, then `end`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeQueue: Effect.Effect<AudioInputQueue> = Effect.gen(function*() {
  const queue = yield* Queue.unbounded<AudioFrame, Cause.Done>()
  return {
    service: { frames: Stream.fromQueue(queue) },
    offer: (frame) => Queue.offer(queue, frame).pipe(Effect.asVoid),
    end: Queue.end(queue).pipe(Effect.asVoid)
  }
})
