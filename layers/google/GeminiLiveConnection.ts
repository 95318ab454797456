/**
 * One Gemini Live connection (`RealtimeConnection`): a WebSocket configured once by `setup`, a
 * reader fiber that turns server messages into baton events, operations written in call order,
 * and the move to a new socket on `goAway`.
 *
 * - `connect` opens the socket, sends `setup`, waits for `setupComplete` (the only message the
 *   server acknowledges: reason `timeout` after `ackTimeout`, `rejected` when the server closes
 *   instead, with its close code and reason) and seeds the initial chat context with one
 *   `clientContent` (`turnComplete: false`: no model call).
 * - Other requests have no acknowledgement in this protocol: their `Ack` succeeds once written.
 * - `goAway`: `GoAway` is emitted; the connection waits until the model is idle (no turn, no
 *   pending tool call) or the deadline nears, opens a new socket with the newest resumption
 *   handle (or, without one or when it is refused, a fresh session re-seeded from the history),
 *   switches to it, closes the old one and emits `Reconnected`. Operations wait during the switch.
 * - Any other close ends the events with a `RealtimeError` (reason `closed`, with the code and the
 *   reason: Gemini reports errors as close frames) and fails later operations with `closed`.
 */
import { Cause, Deferred, Duration, Effect, Exit, Latch, Queue, Schedule, Scope, Stream } from "effect"
import {
  type RealtimeConnection,
  RealtimeError,
  type RealtimeEvent,
  type RealtimeSessionConfig
} from "../../services/RealtimeModel.ts"
import { writtenAck } from "../openai/RealtimeAcks.ts"
import { type Frame, type Liveness, openSocket, type RealtimeSocket } from "../openai/RealtimeSocket.ts"
import { entryOf, GeminiHistory } from "./GeminiHistory.ts"
import { type LiveSocket, makeHandler, makeHandlerState } from "./GeminiLiveHandlers.ts"
import { ClientMessages, type Content, decodeServerFrame, functionResponse } from "./GeminiWire.ts"

export interface GeminiSettings {
  /** Socket URL with the key (secret: never logged). */
  readonly url: string
  readonly model: string
  readonly voice: string | undefined
  readonly inputSampleRate: number
  readonly automaticActivityDetection: boolean
  readonly setupExtra: Readonly<Record<string, unknown>>
  readonly capabilities: RealtimeConnection["capabilities"]
  readonly ackTimeout: Duration.Duration
  readonly connectTimeout: Duration.Duration
  readonly liveness: Liveness
  readonly reconnectAttempts: number
  /** How long before the announced close the switch must start, at the latest. */
  readonly goAwayMargin: Duration.Duration
}

interface Live extends LiveSocket {
  readonly socket: RealtimeSocket
  readonly scope: Scope.Closeable
  readonly closed: Deferred.Deferred<{ readonly code: number; readonly reason: string }>
}

let connections = 0

const error = (reason: RealtimeError["reason"], message: string) => new RealtimeError({ reason, message })
const describeClose = (close: { readonly code: number; readonly reason: string }) =>
  `code ${close.code}${close.reason === "" ? "" : `: ${close.reason}`}`

export const connectGemini = Effect.fn("GeminiLive.connect")(function*(
  settings: GeminiSettings,
  config: RealtimeSessionConfig
): Effect.fn.Return<RealtimeConnection, RealtimeError, Scope.Scope> {
  const scope = yield* Effect.scope
  const id = `gemini-live-${++connections}`
  const events = yield* Queue.unbounded<RealtimeEvent, RealtimeError | Cause.Done>()
  const ready = yield* Latch.make(true)
  const history = new GeminiHistory()
  const hs = makeHandlerState()
  const state = { closed: false, current: undefined as Live | undefined, activity: false }
  /** Sockets replaced after a goAway: whatever they still deliver is dropped. */
  const retired = new Set<number>()
  const emit = (event: RealtimeEvent) => Queue.offer(events, event).pipe(Effect.asVoid)
  const handler = makeHandler({ state: hs, history, emit })
  const toolChoice = config.toolChoice ?? "auto"
  if (toolChoice !== "auto") {
    yield* Effect.logWarning(`gemini ${id}: Gemini Live has no tool choice; "${JSON.stringify(toolChoice)}" is ignored`)
  }

  const onFrame = (live: Live, frame: Frame) =>
    Effect.gen(function*() {
      if (state.closed) return false
      if (frame._tag === "Close") {
        if (live === state.current) yield* Latch.close(ready)
        yield* Deferred.succeed(live.closed, { code: frame.code, reason: frame.reason })
        return false
      }
      if (retired.has(live.socketId)) {
        yield* Effect.logDebug(`gemini ${id}: message from a replaced socket dropped`)
        return true
      }
      const text = frame._tag === "Text" ? frame.text : Buffer.from(frame.bytes).toString("utf8")
      const decoded = decodeServerFrame(text)
      switch (decoded._tag) {
        case "Message":
          yield* handler.handle(live, decoded.message)
          return true
        case "Unknown":
          yield* Effect.logDebug(`gemini ${id}: unknown server message (${decoded.keys}) skipped`)
          return true
        case "Malformed":
          yield* Effect.logWarning(`gemini ${id}: malformed server frame skipped (${decoded.detail})`)
          return true
      }
    })

  const send = (live: Live, message: object) => live.socket.sendUnsafe(JSON.stringify(message))

  /** Opens a socket, sends `setup` and waits for `setupComplete`; re-seeds when not resuming. */
  const establish = (handle: string | undefined, seed: ReadonlyArray<Content>) =>
    Effect.gen(function*() {
      const socketScope = yield* Scope.fork(scope)
      return yield* Effect.gen(function*() {
        const socket = yield* openSocket({ url: settings.url, openTimeout: settings.connectTimeout, liveness: settings.liveness }).pipe(Scope.provide(socketScope))
        const live: Live = {
          socket,
          scope: socketScope,
          socketId: socket.id,
          setupComplete: Deferred.makeUnsafe<void>(),
          goAway: Deferred.makeUnsafe<number>(),
          closed: Deferred.makeUnsafe()
        }
        yield* Stream.fromQueue(socket.frames).pipe(
          Stream.runForEachWhile((frame) => onFrame(live, frame)),
          Effect.ensuring(Deferred.succeed(live.closed, { code: 1006, reason: "" })),
          Effect.forkIn(socketScope)
        )
        send(live, ClientMessages.setup({
          model: settings.model,
          instructions: config.instructions,
          tools: config.tools,
          voice: settings.voice,
          handle,
          automaticActivityDetection: settings.automaticActivityDetection,
          extra: settings.setupExtra
        }))
        yield* Effect.raceFirst(
          Deferred.await(live.setupComplete).pipe(
            Effect.timeoutOrElse({
              duration: settings.ackTimeout,
              orElse: () => Effect.fail(error("timeout", `no setupComplete within ${Duration.format(settings.ackTimeout)}`))
            })
          ),
          Deferred.await(live.closed).pipe(
            Effect.flatMap((close) => Effect.fail(error("rejected", `the server refused the setup (${describeClose(close)})`)))
          )
        )
        if (seed.length > 0) send(live, ClientMessages.clientContent(seed, false))
        return live
      }).pipe(Effect.onError(() => Scope.close(socketScope, Exit.void)))
    })

  const shutdown = (reason: RealtimeError) =>
    Effect.gen(function*() {
      if (state.closed) return
      state.closed = true
      yield* Queue.failCause(events, Cause.fail(reason))
      yield* Latch.open(ready)
      if (state.current !== undefined) yield* Scope.close(state.current.scope, Exit.void)
    })

  const idle = Effect.suspend(() => Effect.succeed(hs.turn === undefined && hs.pendingCalls.size === 0)).pipe(
    Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (isIdle) => isIdle })
  )

  /** Moves to a new socket: resumes with the newest handle, else re-seeds a fresh session. */
  const switchSocket = (old: Live, timeLeftMs: number) =>
    Effect.gen(function*() {
      const margin = Duration.toMillis(settings.goAwayMargin)
      yield* Effect.raceFirst(idle, Deferred.await(old.closed)).pipe(
        Effect.timeoutOption(Math.max(0, timeLeftMs - margin))
      )
      yield* Latch.close(ready)
      const reseed = history.list().map((e) => e.content)
      const attempt = Effect.suspend(() =>
        hs.handle === undefined
          ? establish(undefined, reseed)
          : establish(hs.handle, []).pipe(
            Effect.catch((e) => {
              hs.handle = undefined
              return Effect.logInfo(`gemini ${id}: resuming failed (${e.message}); starting a fresh session`).pipe(
                Effect.andThen(establish(undefined, reseed))
              )
            })
          )
      )
      const live = yield* attempt.pipe(
        Effect.retry({ times: Math.max(0, settings.reconnectAttempts - 1), schedule: Schedule.spaced("250 millis") })
      )
      retired.add(old.socketId)
      state.current = live
      yield* Scope.close(old.scope, Exit.void)
      // what the old socket had in progress is lost with it
      if (hs.turn !== undefined) yield* handler.endTurn("incomplete")
      for (const callId of hs.pendingCalls) {
        hs.cancelledCalls.add(callId)
        yield* Effect.logInfo(`gemini ${id}: tool call ${callId} was pending on the replaced socket; its output will not be sent`)
      }
      hs.pendingCalls.clear()
      state.activity = false
      yield* emit({ _tag: "Reconnected", reason: "goAway" })
      yield* Latch.open(ready)
      return live
    })

  const supervise = (first: Live) =>
    Effect.gen(function*() {
      let live = first
      while (!state.closed) {
        const next = yield* Effect.raceFirst(
          Deferred.await(live.goAway).pipe(Effect.map((timeLeftMs) => ({ _tag: "GoAway" as const, timeLeftMs }))),
          Deferred.await(live.closed).pipe(Effect.map((close) => ({ _tag: "Closed" as const, close })))
        )
        if (state.closed) return
        if (next._tag === "Closed") {
          yield* shutdown(error("closed", `Gemini Live closed the connection (${describeClose(next.close)})`))
          return
        }
        yield* Effect.logInfo(`gemini ${id}: goAway (${next.timeLeftMs} ms left); moving to a new socket`)
        const moved = yield* Effect.result(switchSocket(live, next.timeLeftMs))
        if (moved._tag === "Failure") {
          yield* shutdown(error("closed", `reconnection after goAway failed: ${moved.failure.message}`))
          return
        }
        live = moved.success
      }
    })

  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      if (state.closed) return
      state.closed = true
      yield* Queue.end(events)
      yield* Latch.open(ready)
    })
  )
  const seedEntries = config.chatContext.items.flatMap((item) => {
    const entry = entryOf(item)
    return entry === undefined || (item._tag === "Message" && item.text === "") ? [] : [entry]
  })
  const first = yield* establish(undefined, seedEntries.map((e) => e.content))
  for (const entry of seedEntries) history.push(entry)
  state.current = first
  yield* supervise(first).pipe(Effect.forkIn(scope))

  const exec = <A>(what: string, write: (live: Live) => A): Effect.Effect<A, RealtimeError> =>
    Effect.gen(function*() {
      yield* ready.await
      const live = state.current
      if (state.closed || live === undefined || !live.socket.isOpen()) {
        return yield* error("closed", `${what}: the connection is closed`)
      }
      return write(live)
    })

  const unsupported = (what: string) => Effect.fail(error("unsupported", `Gemini Live: ${what}`))
  const sameTools = (tools: RealtimeSessionConfig["tools"]) => JSON.stringify(tools) === JSON.stringify(config.tools)

  const connection: RealtimeConnection = {
    id,
    provider: "google",
    model: settings.model,
    capabilities: settings.capabilities,
    events: Stream.fromQueue(events),
    updateSession: (changes) => {
      if (changes.instructions !== undefined && changes.instructions !== config.instructions) {
        return unsupported("instructions are fixed by setup for the whole session")
      }
      if (changes.tools !== undefined && !sameTools(changes.tools)) return unsupported("tools are fixed by setup for the whole session")
      if (changes.toolChoice !== undefined && JSON.stringify(changes.toolChoice) !== JSON.stringify(toolChoice)) {
        return unsupported("there is no tool choice")
      }
      return exec("updateSession", () => writtenAck)
    },
    updateChatContext: (context) =>
      Effect.gen(function*() {
        const plan = history.plan(context)
        if (plan.missing.length > 0) {
          return yield* unsupported(`the history is append-only; removing ${plan.missing.join(", ")} is impossible`)
        }
        if (plan.skipped.length > 0) {
          yield* Effect.logDebug(`gemini ${id}: items taken as already in the history: ${plan.skipped.join(", ")}`)
        }
        const entries = plan.append.flatMap((item) => {
          const entry = entryOf(item)
          return entry === undefined ? [] : [entry]
        })
        return yield* exec("clientContent", (live) => {
          if (entries.length > 0) {
            send(live, ClientMessages.clientContent(entries.map((e) => e.content), false))
            for (const entry of entries) history.push(entry)
          }
          return writtenAck
        })
      }),
    sendToolOutput: (output) =>
      exec("toolResponse", (live) => {
        if (hs.cancelledCalls.has(output.callId)) return writtenAck
        hs.pendingCalls.delete(output.callId)
        const response = functionResponse(output.callId, output.name, output.output, output.isError)
        send(live, ClientMessages.toolResponse([response]))
        history.push({
          id: `gemini_out_${output.callId}`,
          origin: "client",
          kind: "output",
          role: "user",
          text: "",
          callId: output.callId,
          content: { role: "user", parts: [{ functionResponse: response }] }
        })
        return writtenAck
      }),
    createResponse: (options = {}) =>
      options.toolChoice !== undefined && JSON.stringify(options.toolChoice) !== JSON.stringify(toolChoice)
        ? unsupported("there is no per-response tool choice")
        : exec("clientContent (turnComplete)", (live) => {
          const turns: Array<Content> = options.instructions === undefined
            ? []
            : [{ role: "user", parts: [{ text: options.instructions }] }]
          send(live, ClientMessages.clientContent(turns, true))
        }),
    // a `clientContent` interrupts the current generation (docs/protocols.md 2.3)
    // Gemini has no response ids: this cuts the model's current turn, whichever it is.
    cancelResponse: () => exec("clientContent (cancel)", (live) => void send(live, ClientMessages.clientContent([], false))),
    truncate: () => unsupported("a model turn cannot be truncated"),
    pushAudio: (pcm) =>
      exec("realtimeInput.audio", (live) => {
        if (!settings.automaticActivityDetection && !state.activity) {
          state.activity = true
          send(live, ClientMessages.activityStart())
        }
        send(live, ClientMessages.audio(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString("base64"), settings.inputSampleRate))
      }),
    commitAudio: exec("realtimeInput (end of input)", (live) => {
      if (settings.automaticActivityDetection) return void send(live, ClientMessages.audioStreamEnd())
      if (!state.activity) return
      state.activity = false
      send(live, ClientMessages.activityEnd())
    }),
    // Gemini keeps no client-side input buffer to clear
    clearAudio: exec("clearAudio", () => undefined)
  }
  return connection
})
