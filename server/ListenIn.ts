/**
 * Listen-in (issue 35): an operator who opens a session hears it, the caller's audio and the
 * agents' mixed into one PCM16 stream. A line's `Tap` hands each frame of either side to whoever
 * listens (the caller's as it is heard, the agents' as it is written to the caller); a listener
 * resamples both to one rate and mixes them in real time: the agents' audio often comes faster
 * than it plays (a TTS streams ahead), so the mix is paced by the clock, a tick's worth at a time.
 * A listener that falls behind loses its oldest frames (a sliding queue), never the call's.
 */
import { Clock, Effect, Queue, type Scope } from "effect"
import * as AudioFrame from "../services/AudioFrame.ts"
import type { AudioOutputService } from "../services/AudioOutput.ts"
import type { ResamplerService, ResamplerStage } from "../services/Resampler.ts"

/** Which side of the call a frame is from. */
export type Side = "caller" | "agent"

/** A frame of one side, or (`frame` undefined) the agents' audio cut: what is buffered is dropped. */
export interface Heard {
  readonly side: Side
  readonly frame: AudioFrame.AudioFrame | undefined
}

/** The listeners of one line. */
export interface Tap {
  readonly listeners: Set<Queue.Queue<Heard>>
}

/** A tap nobody listens to yet. */
export const make = (): Tap => ({ listeners: new Set() })

/** Gives `frame` of `side` to every listener (nothing to do when none listens). */
export const hear = (tap: Tap, side: Side, frame: AudioFrame.AudioFrame): void => {
  for (const listener of tap.listeners) Queue.offerUnsafe(listener, { side, frame })
}

/** The agents' audio was cut (a barge-in, a take-over): listeners drop what they buffered of it. */
export const cut = (tap: Tap): void => {
  for (const listener of tap.listeners) Queue.offerUnsafe(listener, { side: "agent", frame: undefined })
}

/** What a listener may fall behind by, in frames, before its oldest are dropped. */
const BACKLOG = 2048

/** Listens to `tap` for the current Scope. */
export const listen = (tap: Tap): Effect.Effect<Queue.Dequeue<Heard>, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tap(Queue.sliding<Heard>(BACKLOG), (queue) => Effect.sync(() => void tap.listeners.add(queue))),
    (queue) => Effect.sync(() => void tap.listeners.delete(queue))
  )

/** `output`, its audio also heard by the tap's listeners. */
export const tapped = (tap: Tap, output: AudioOutputService): AudioOutputService => ({
  write: (pcm, sampleRate, info) =>
    Effect.suspend(() => {
      if (tap.listeners.size > 0) hear(tap, "agent", AudioFrame.fromPcm16(pcm, sampleRate))
      return output.write(pcm, sampleRate, info)
    }),
  clear: (info) =>
    Effect.suspend(() => {
      cut(tap)
      return output.clear(info)
    })
})

/** Samples waiting to be mixed, oldest first. */
interface Fifo {
  data: Int16Array
  length: number
}

/**
 * The two sides' samples at one rate, waiting to be mixed.
 *
 * @since 0.1.0
 * @category models
 */
export interface Mixer {
  readonly sampleRate: number
  readonly caller: Fifo
  readonly agent: Fifo
  /** At most this many samples wait per side (the oldest go first). */
  readonly capacity: number
}

/** A mixer at `sampleRate` that keeps at most `maxSeconds` of each side. */
export const mixer = (sampleRate: number, maxSeconds = 10): Mixer => ({
  sampleRate,
  caller: { data: new Int16Array(sampleRate), length: 0 },
  agent: { data: new Int16Array(sampleRate), length: 0 },
  capacity: sampleRate * maxSeconds
})

/** Adds `samples` (at the mixer's rate) to `side`. */
export const push = (mix: Mixer, side: Side, samples: Int16Array): void => {
  const fifo = mix[side]
  const needed = fifo.length + samples.length
  if (needed > fifo.data.length) {
    const grown = new Int16Array(Math.min(Math.max(needed, fifo.data.length * 2), Math.max(mix.capacity, samples.length)))
    grown.set(fifo.data.subarray(0, fifo.length))
    fifo.data = grown
  }
  const overflow = fifo.length + samples.length - fifo.data.length
  if (overflow > 0) {
    fifo.data.copyWithin(0, overflow, fifo.length)
    fifo.length -= overflow
  }
  fifo.data.set(samples, fifo.length)
  fifo.length += samples.length
}

/** Drops what `side` has waiting. */
export const drop = (mix: Mixer, side: Side): void => {
  mix[side].length = 0
}

const takeFrom = (fifo: Fifo, n: number): Int16Array => {
  const count = Math.min(n, fifo.length)
  const out = fifo.data.slice(0, count)
  fifo.data.copyWithin(0, count, fifo.length)
  fifo.length -= count
  return out
}

/**
 * Up to `n` samples of both sides summed (clipped to PCM16), as long as the longer side has; a
 * side that has fewer adds silence. Undefined when neither side has any.
 */
export const take = (mix: Mixer, n: number): Int16Array | undefined => {
  const caller = takeFrom(mix.caller, n)
  const agent = takeFrom(mix.agent, n)
  if (caller.length === 0 && agent.length === 0) return undefined
  const out = new Int16Array(Math.max(caller.length, agent.length))
  for (let i = 0; i < out.length; i++) out[i] = Math.max(-32768, Math.min(32767, (caller[i] ?? 0) + (agent[i] ?? 0)))
  return out
}

/** The listen-in stream's rate (the caller page's default output rate). */
export const SAMPLE_RATE = 24_000
/** How often the mix is taken. */
const TICK_MS = 20
/** A tick late by more than this (a stalled loop) does not catch up with a burst. */
const MAX_TICK_MS = 200

/**
 * Listens to `tap` and sends the mix to `send` as PCM16 at `SAMPLE_RATE`, paced by the clock,
 * until interrupted (then it no longer listens).
 */
export const stream = (
  tap: Tap,
  resampler: ResamplerService,
  send: (pcm: Uint8Array) => Effect.Effect<void>
): Effect.Effect<never> =>
  Effect.gen(function*() {
    const heard = yield* listen(tap)
    const mix = mixer(SAMPLE_RATE)
    const stages = new Map<string, ResamplerStage>()
    const toMix = (side: Side, frame: AudioFrame.AudioFrame) =>
      Effect.gen(function*() {
        const key = `${side}/${frame.sampleRate}`
        const stage = stages.get(key) ?? (yield* resampler.make(frame.sampleRate, SAMPLE_RATE))
        stages.set(key, stage)
        for (const out of stage.push(frame)) push(mix, side, out.data)
      })
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(heard), ({ frame, side }) =>
      frame === undefined ? Effect.sync(() => drop(mix, side)) : toMix(side, frame))))
    let last = yield* Clock.currentTimeMillis
    return yield* Effect.forever(Effect.gen(function*() {
      yield* Effect.sleep(TICK_MS)
      const now = yield* Clock.currentTimeMillis
      const due = Math.round((Math.min(now - last, MAX_TICK_MS) * SAMPLE_RATE) / 1000)
      last = now
      const out = take(mix, due)
      if (out) yield* send(AudioFrame.toPcm16(AudioFrame.make(out, SAMPLE_RATE)))
    }))
  }).pipe(Effect.scoped)
