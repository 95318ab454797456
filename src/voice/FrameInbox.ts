/**
 * How the user's audio reaches the listening fiber: the transport's stream is drained into an
 * array the listener takes from, and one long-lived timer tells the listener when the line has
 * gone quiet.
 *
 * The listener handles each input in turn; what it must notice is the *absence* of input (no frame
 * for the endpointing delay during a turn: a line that stopped). Waiting for each frame with a
 * timeout costs a timer fiber per frame, and handing each frame over with an acknowledgement a
 * `Deferred` and a queue's wake-ups: at 20 ms frames and a hundred calls, most of a process's
 * CPU. Here a frame costs a push and, when the listener was idle, one resume; the timer is armed
 * when the listener goes idle with a quiet limit and it was not already running, and when it fires
 * early (input came since) it sleeps again for the rest, so it wakes about once per limit, not per
 * frame. The limit counts from the moment the listener went idle, on the clock in the context (a
 * `TestClock` in tests), as a timeout on each wait would.
 *
 * The stream is pulled again once the listener has handled what it gave and waits for more, as
 * if the listener pulled it itself: a stream pushed at full speed (a WAV file) is not read ahead,
 * and what the stream does as it is pulled happens when the listener takes the input. When a
 * pull gives several inputs (frames that arrived late, together), the listener yields between
 * them, so the fibers it feeds (transcripts, the session) run between frames as on a line at
 * real time.
 *
 * @since 0.1.0
 * @internal
 */
import { Clock, Effect, Stream } from "effect"

/**
 * What the listener takes: an input, `"quiet"` (none came for the limit it set), or `"ended"`
 * (the stream is over and every input was taken).
 *
 * @internal
 */
export type Taken<A> = { readonly _tag: "Input"; readonly input: A } | "quiet" | "ended"

/** The inbox's state, shared by the stream's fiber, the timer's and the listener's. */
interface State<A> {
  readonly items: Array<A>
  /** The next item to take in `items`. */
  head: number
  ended: boolean
  /** The listener, waiting for an input or the quiet limit. */
  listener: ((taken: Effect.Effect<Taken<A>>) => void) | undefined
  /** The stream's fiber, waiting for the listener to handle what it gave. */
  reader: (() => void) | undefined
  /** The timer's fiber, parked until the listener goes idle with a limit. */
  timer: (() => void) | undefined
  /** When the listener went idle (ms of the clock), and the quiet limit it set then. */
  idleSince: number
  idleLimitMs: number | undefined
  /** The listener is waiting (not handling an input). */
  idle: boolean
  /** Inputs taken since the listener last waited. */
  burst: number
}

/**
 * The listener's side: `take(limitMs)` is the next input, or `"quiet"` if none comes within
 * `limitMs` of the clock (no limit: `undefined`).
 *
 * @internal
 */
export interface FrameInbox<A> {
  readonly take: (limitMs: number | undefined) => Effect.Effect<Taken<A>>
}

const pending = <A>(state: State<A>) => state.items.length - state.head

const shift = <A>(state: State<A>): A => {
  const item = state.items[state.head]!
  state.items[state.head] = undefined as A
  state.head++
  if (state.head === state.items.length) {
    state.items.length = 0
    state.head = 0
  }
  return item
}

const deliver = <A>(state: State<A>, taken: Taken<A>) => {
  const listener = state.listener
  if (listener === undefined) return
  state.listener = undefined
  state.idle = false
  if (taken !== "quiet" && taken !== "ended") state.burst = 1
  listener(Effect.succeed(taken))
}

/** Reads `input` into the inbox until it ends; each pull waits for the listener to be done with
 * the last. */
const read = <A>(state: State<A>, input: Stream.Stream<A>) =>
  input.pipe(
    Stream.runForEachArray((chunk) => {
      for (const item of chunk) state.items.push(item)
      if (state.listener !== undefined) deliver(state, { _tag: "Input", input: shift(state) })
      if (pending(state) === 0 && state.listener !== undefined) return Effect.void
      return Effect.callback<void>((resume) => {
        state.reader = () => resume(Effect.void)
        return Effect.sync(() => {
          state.reader = undefined
        })
      })
    }),
    Effect.ensuring(Effect.sync(() => {
      state.ended = true
      deliver(state, "ended")
    }))
  )

/** The quiet timer: sleeps until the idle listener's limit, and tells it when no input came. */
const watch = <A>(state: State<A>, clock: Clock.Clock) =>
  Effect.gen(function*() {
    for (;;) {
      if (!state.idle || state.idleLimitMs === undefined || state.listener === undefined) {
        yield* Effect.callback<void>((resume) => {
          state.timer = () => resume(Effect.void)
          return Effect.sync(() => {
            state.timer = undefined
          })
        })
        continue
      }
      const rest = state.idleSince + state.idleLimitMs - clock.currentTimeMillisUnsafe()
      if (rest > 0) {
        yield* Effect.sleep(rest)
        continue
      }
      deliver(state, "quiet")
    }
  })

/**
 * An inbox fed by `input`, read by the fiber that calls `take` (one listener). The stream's
 * reader and the quiet timer are forked in the current Scope.
 *
 * @internal
 */
export const make = <A>(input: Stream.Stream<A>) =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const state: State<A> = {
      items: [],
      head: 0,
      ended: false,
      listener: undefined,
      reader: undefined,
      timer: undefined,
      idleSince: 0,
      idleLimitMs: undefined,
      idle: false,
      burst: 0
    }
    yield* Effect.forkScoped(read(state, input))
    yield* Effect.forkScoped(watch(state, clock))
    const wait = (limitMs: number | undefined) =>
      Effect.callback<Taken<A>>((resume) => {
        state.burst = 0
        state.idle = true
        state.idleSince = clock.currentTimeMillisUnsafe()
        state.idleLimitMs = limitMs
        state.listener = resume
        if (state.reader !== undefined) {
          const reader = state.reader
          state.reader = undefined
          reader()
        }
        if (limitMs !== undefined && state.timer !== undefined) {
          const timer = state.timer
          state.timer = undefined
          timer()
        }
        return Effect.sync(() => {
          state.listener = undefined
          state.idle = false
        })
      })
    const take = (limitMs: number | undefined): Effect.Effect<Taken<A>> =>
      Effect.suspend(() => {
        if (pending(state) > 0) {
          const taken = Effect.sync((): Taken<A> => ({ _tag: "Input", input: shift(state) }))
          // (inputs that came together: the fibers they feed run between them)
          return state.burst++ > 0 ? Effect.andThen(Effect.yieldNow, taken) : taken
        }
        return state.ended ? Effect.succeed("ended" as const) : wait(limitMs)
      })
    return { take } satisfies FrameInbox<A>
  })
