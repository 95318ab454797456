/**
 * An `Stt` that listens with the first of several engines that can: when the speech-to-text
 * provider is down, the caller is still heard.
 *
 * - A stream is opened on the first engine that opens one (a refused key, an unreachable
 *   provider: the next is asked).
 * - An engine whose stream fails later (a push, the end of an utterance, or its transcripts) is
 *   passed over for `recoverAfter`: the voice pipeline opens a new stream on the failure and
 *   gives it again what the old one had not answered, and that stream is the next engine's.
 * - When every engine is passed over, all are tried in order.
 * - The engines must take the same rate (the pipeline sends one); the layer refuses others.
 * - Each failover is a warning in the log.
 *
 * ```ts
 * SttFallback.layer([DeepgramStt.layerConfig, PocketsphinxStt.layer()])
 * ```
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Cause, Clock, Context, Effect, Exit, Layer, Scope, Stream } from "effect"
import * as Fallback from "./Fallback.ts"
import { Stt, type SttService, type SttStream } from "./Stt.ts"
import type { VoiceError } from "./VoiceError.ts"

interface Engine extends Fallback.Engine {
  readonly stt: SttService
}

type Engines<E, R> = readonly [Layer.Layer<Stt, E, R>, ...Array<Layer.Layer<Stt, E, R>>]

/**
 * One `Stt` over `engines`, tried in order (see the module's comment).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <E, R>(engines: Engines<E, R>, options: Pick<Fallback.Options, "recoverAfter"> = {}): Layer.Layer<Stt, E, R> =>
  Layer.effect(
    Stt,
    Effect.gen(function*() {
      const recoverAfterMs = Fallback.recoverAfterMs(options)
      const built: Array<Engine> = []
      for (const [i, engine] of engines.entries()) {
        built.push({ stt: Context.get(yield* Layer.build(engine), Stt), name: `SttFallback: engine ${i + 1}`, downUntil: 0 })
      }
      const sampleRate = built[0]!.stt.sampleRate
      if (built.some((e) => e.stt.sampleRate !== sampleRate)) {
        return yield* Effect.die(new Error(`SttFallback: the engines take different rates (${built.map((e) => e.stt.sampleRate).join(", ")} Hz); give engines of one rate`))
      }
      const passOver = (engine: Engine) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          engine.downUntil = now + recoverAfterMs
        })
      /** The engine's stream; its first failure passes the engine over. */
      const watched = (engine: Engine, stream: SttStream): SttStream => {
        const failed = <A, R2>(effect: Effect.Effect<A, VoiceError, R2>) => Effect.tapError(effect, () => passOver(engine))
        return {
          push: (frame) => failed(stream.push(frame)),
          endUtterance: failed(stream.endUtterance),
          events: stream.events.pipe(Stream.tapError(() => passOver(engine)))
        }
      }
      return Stt.of({
        sampleRate,
        stream: (sttOptions) =>
          Effect.gen(function*() {
            const now = yield* Clock.currentTimeMillis
            const order = Fallback.inOrder(built, now)
            const outer = yield* Effect.scope
            for (let k = 0; ; k++) {
              const engine = order[k]!
              const scope = yield* Scope.fork(outer)
              const opened = yield* engine.stt.stream(sttOptions).pipe(Scope.provide(scope), Effect.exit)
              if (Exit.isSuccess(opened)) {
                engine.downUntil = 0
                return watched(engine, opened.value)
              }
              yield* Scope.close(scope, Exit.void)
              yield* passOver(engine)
              const next = order[k + 1]
              if (next === undefined) return yield* opened
              yield* Effect.logWarning(`${engine.name} could not open a stream (${Cause.pretty(opened.cause).split("\n")[0]}); trying ${next.name}`)
            }
          })
      })
    })
  )
