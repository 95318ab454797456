/**
 * One OpenAI Realtime connection (`RealtimeConnection`): a WebSocket, a reader fiber that turns
 * server events into baton events, pipelined operations with acknowledgements, and the
 * reconnection that survives a session expiry.
 *
 * Lifecycle: `connect` opens the socket, waits for `session.created`, sends the full
 * `session.update` and the items of the initial chat context, and returns once the server has
 * acknowledged them, or at once with `pipelined` (their acknowledgement is then `configured`). Operations write their frames synchronously (after registering their acks),
 * so frames leave in call order and nothing interleaves a chat-context diff. When the server
 * reports `session_expired`, operations wait while a new socket is opened, configured with the
 * current session and re-seeded with the items the connection held (as text, same ids); then a
 * `Reconnected` event is emitted and operations resume on the new socket. Any other close ends
 * the event stream with a `RealtimeError` (reason `closed`) and fails pending and later
 * operations with `closed`.
 */
import { Cause, Deferred, type Duration, Effect, Exit, Latch, Queue, Schedule, Scope, Stream } from "effect"
import {
  type Ack,
  type RealtimeConnection,
  RealtimeError,
  type RealtimeEvent,
  type RealtimeSessionConfig,
  type RealtimeToolChoice
} from "../../services/RealtimeModel.ts"
import {
  deleteKey,
  handshakeChannel,
  type HandlerContext,
  itemKey,
  type Live,
  makeHandler,
  type Outcome,
  SESSION_CHANNEL,
  sessionMatches
} from "./OpenAiRealtimeHandlers.ts"
import { ackOf, makeAckTracker, type PendingAck, writtenAck } from "./RealtimeAcks.ts"
import { clientFromHeld, diffChatContext, heldFromClient, HeldItems, IdMap } from "./RealtimeItems.ts"
import { type Frame, type Liveness, openSocket, printableUrl, type RealtimeSocket } from "./RealtimeSocket.ts"
import { type ClientItem, ClientEvents, decodeServerFrame, toolOutputText, toWireToolChoice, toWireTools } from "./RealtimeWire.ts"

/** Everything a connection needs from the layer (resolved options; `headers` hold the key). */
export interface ConnectionSettings {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly model: string
  /** `session` fields sent at every (re)configuration besides instructions and tools (audio...). */
  readonly sessionBase: Readonly<Record<string, unknown>>
  readonly capabilities: RealtimeConnection["capabilities"]
  readonly ackTimeout: Duration.Duration
  readonly connectTimeout: Duration.Duration
  readonly liveness: Liveness
  readonly reconnectOnExpiry: boolean
  readonly reconnectAttempts: number
}

interface Socket extends Live {
  readonly socket: RealtimeSocket
  readonly scope: Scope.Closeable
}

const MAX_APPEND_BYTES = 8 * 1024 * 1024
let connections = 0

const closedError = (message: string) => new RealtimeError({ reason: "closed", message })

const outcomeError = (outcome: Outcome) =>
  outcome._tag === "Expired"
    ? closedError(`OpenAI Realtime session expired: ${outcome.message}`)
    : closedError(
      `OpenAI Realtime server closed the connection (code ${outcome.code}${outcome.reason === "" ? "" : `: ${outcome.reason}`})`
    )

export const connectOpenAi = Effect.fn("OpenAiRealtime.connect")(function*(
  settings: ConnectionSettings,
  config: RealtimeSessionConfig
): Effect.fn.Return<RealtimeConnection, RealtimeError, Scope.Scope> {
  const scope = yield* Effect.scope
  const id = `openai-rt-${++connections}`
  const events = yield* Queue.unbounded<RealtimeEvent, RealtimeError | Cause.Done>()
  const ready = yield* Latch.make(true)
  const acks = makeAckTracker({ timeout: settings.ackTimeout, scope })
  const held = new HeldItems()
  const ids = new IdMap()
  const desired = { instructions: config.instructions, tools: config.tools, toolChoice: config.toolChoice }
  const state = { closed: false, current: undefined as Socket | undefined, eventSeq: 0 }
  const activeResponses = new Set<string>()
  const nextEventId = () => `baton_${(++state.eventSeq).toString(36)}`
  const emit = (event: RealtimeEvent) => Queue.offer(events, event).pipe(Effect.asVoid)
  const ctx: HandlerContext = { held, acks, ready, activeResponses, emit }
  const handle = makeHandler(ctx)

  const onFrame = (live: Socket, frame: Frame) =>
    Effect.gen(function*() {
      if (state.closed) return false
      switch (frame._tag) {
        case "Close":
          yield* Deferred.succeed(live.ended, { _tag: "Closed", code: frame.code, reason: frame.reason })
          return false
        case "Binary":
          yield* Effect.logWarning(`realtime ${id}: binary frame (${frame.bytes.byteLength} bytes) skipped`)
          return true
        case "Text": {
          const decoded = decodeServerFrame(frame.text)
          switch (decoded._tag) {
            case "Event":
              return yield* handle(live, decoded.event)
            case "Ignored":
              return true
            case "Unknown":
              yield* Effect.logDebug(`realtime ${id}: unknown server event ${decoded.type} skipped`)
              return true
            case "Malformed":
              yield* Effect.logWarning(`realtime ${id}: malformed server frame skipped (${decoded.detail})`)
              return true
          }
        }
      }
    })

  const reader = (live: Socket) =>
    Stream.fromQueue(live.socket.frames).pipe(
      Stream.runForEachWhile((frame) => onFrame(live, frame)),
      Effect.ensuring(Deferred.succeed(live.ended, { _tag: "Closed", code: 1006, reason: "" }))
    )

  /** `effect`, unless the socket ends first (then a `connect` error naming the close). */
  const unlessEnded = <A>(live: Socket, effect: Effect.Effect<A, RealtimeError>, during: string) =>
    Effect.raceFirst(
      effect,
      Deferred.await(live.ended).pipe(
        Effect.flatMap((outcome) =>
          Effect.fail(new RealtimeError({ reason: "connect", message: `${outcomeError(outcome).message} during ${during}` }))
        )
      )
    )

  const sessionFields = () => ({
    ...settings.sessionBase,
    instructions: desired.instructions,
    tools: toWireTools(desired.tools),
    tool_choice: toWireToolChoice(desired.toolChoice ?? "auto")
  })

  /** Writes the creation of `item` after `previous` (`undefined`: append); returns its ack entry. */
  const createItemUnsafe = (live: Socket, item: ClientItem, previous: string | undefined, label: string) => {
    const eventId = nextEventId()
    const entry = acks.pendingUnsafe(itemKey(item.id)) ??
      acks.registerKeyUnsafe(`conversation.item.create ${label}`, eventId, itemKey(item.id), () => held.remove(item.id))
    held.put(heldFromClient(item), previous)
    live.socket.sendUnsafe(JSON.stringify(ClientEvents.itemCreate(eventId, item, previous)))
    return entry
  }

  /** Configures a fresh socket and (re)creates the conversation; switches to it. Synchronous. */
  const configureUnsafe = (live: Socket, mode: "connect" | "reconnect"): Array<PendingAck> => {
    const entries: Array<PendingAck> = []
    const eventId = nextEventId()
    entries.push(acks.registerOrderedUnsafe("session.update (configuration)", eventId, handshakeChannel(live.socketId), () => true))
    live.socket.sendUnsafe(JSON.stringify(ClientEvents.sessionUpdate(eventId, sessionFields())))
    if (mode === "connect") {
      const plan = diffChatContext([], config.chatContext, ids)
      for (const [baton, provider] of plan.aliases) ids.alias(baton, provider)
      for (const c of plan.creates) entries.push(createItemUnsafe(live, c.item, undefined, c.batonId))
    } else {
      const items = held.list().flatMap((h) => {
        const item = clientFromHeld(h)
        return item === undefined ? [] : [item]
      })
      held.clear()
      for (const item of items) entries.push(createItemUnsafe(live, item, undefined, item.id))
    }
    state.current = live
    return entries
  }

  const establish = (mode: "connect" | "reconnect") =>
    Effect.gen(function*() {
      const socketScope = yield* Scope.fork(scope)
      return yield* Effect.gen(function*() {
        const socket = yield* openSocket({
          url: settings.url,
          headers: settings.headers,
          openTimeout: settings.connectTimeout,
          liveness: settings.liveness
        }).pipe(Scope.provide(socketScope))
        const live: Socket = {
          socket,
          scope: socketScope,
          socketId: socket.id,
          created: Deferred.makeUnsafe<void>(),
          ended: Deferred.makeUnsafe<Outcome>()
        }
        yield* reader(live).pipe(Effect.forkIn(socketScope))
        yield* unlessEnded(
          live,
          Deferred.await(live.created).pipe(
            Effect.timeoutOrElse({
              duration: settings.connectTimeout,
              orElse: () => Effect.fail(new RealtimeError({ reason: "timeout", message: "no session.created from the server" }))
            })
          ),
          "the handshake"
        )
        const entries = configureUnsafe(live, mode)
        yield* acks.arm(entries)
        // Pipelined (the first connect only): the caller watches `configured` instead.
        if (mode === "connect" && config.pipelined === true) configured = ackOf(entries)
        else yield* unlessEnded(live, ackOf(entries).await, "the session configuration")
        if (mode === "reconnect") yield* acks.resolveAll(SESSION_CHANNEL, (key) => key.startsWith("delete:"))
        return live
      }).pipe(Effect.onError(() => Scope.close(socketScope, Exit.void)))
    })

  const shutdown = (error: RealtimeError) =>
    Effect.gen(function*() {
      if (state.closed) return
      state.closed = true
      yield* acks.failAll(error)
      yield* Queue.failCause(events, Cause.fail(error))
      yield* Latch.open(ready)
      if (state.current !== undefined) yield* Scope.close(state.current.scope, Exit.void)
    })

  const reconnect = (old: Socket, outcome: Outcome) =>
    Effect.gen(function*() {
      yield* Effect.logInfo(`realtime ${id}: session expired (${outcomeError(outcome).message}); reconnecting`)
      yield* Scope.close(old.scope, Exit.void)
      const live = yield* establish("reconnect").pipe(
        Effect.retry({ times: Math.max(0, settings.reconnectAttempts - 1), schedule: Schedule.spaced("250 millis") })
      )
      for (const responseId of activeResponses) {
        yield* emit({ _tag: "ResponseDone", responseId, status: "failed", error: "session expired; reconnected" })
      }
      activeResponses.clear()
      yield* emit({ _tag: "Reconnected", reason: "session_expired" })
      yield* Latch.open(ready)
      return live
    })

  const supervise = (first: Socket) =>
    Effect.gen(function*() {
      let live = first
      while (!state.closed) {
        const outcome = yield* Deferred.await(live.ended)
        if (state.closed) return
        if (outcome._tag === "Expired" && settings.reconnectOnExpiry) {
          const next = yield* Effect.result(reconnect(live, outcome))
          if (next._tag === "Failure") {
            yield* shutdown(closedError(`reconnection after a session expiry failed: ${next.failure.message}`))
            return
          }
          live = next.success
          continue
        }
        yield* shutdown(outcomeError(outcome))
      }
    })

  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      if (state.closed) return
      state.closed = true
      yield* acks.failAll(closedError("the connection was closed"))
      yield* Queue.end(events)
      yield* Latch.open(ready)
    })
  )
  let configured: Ack | undefined
  const first = yield* establish("connect")
  yield* Effect.logDebug(`realtime ${id}: connected to ${printableUrl(settings.url)} (${settings.model})`)
  yield* supervise(first).pipe(Effect.forkIn(scope))

  /** Runs a synchronous write against the current socket, after any reconnection. */
  const exec = <A>(what: string, write: (live: Socket) => A): Effect.Effect<A, RealtimeError> =>
    Effect.gen(function*() {
      yield* ready.await
      const live = state.current
      if (state.closed || live === undefined || !live.socket.isOpen()) {
        return yield* closedError(`${what}: the connection is closed`)
      }
      return write(live)
    })

  const send = (live: Socket, message: object) => live.socket.sendUnsafe(JSON.stringify(message))

  const withAck = (what: string, write: (live: Socket) => Array<PendingAck>): Effect.Effect<Ack, RealtimeError> =>
    exec(what, write).pipe(Effect.tap(acks.arm), Effect.map(ackOf))

  const checkToolChoice = (choice: RealtimeToolChoice | undefined, tools: ReadonlyArray<{ readonly name: string }>) =>
    choice !== undefined && typeof choice === "object" && !tools.some((t) => t.name === choice.tool)
      ? Effect.fail(new RealtimeError({ reason: "protocol", message: `tool choice names an unknown tool: ${choice.tool}` }))
      : Effect.void

  const connection: RealtimeConnection = {
    id,
    provider: "openai",
    model: settings.model,
    capabilities: settings.capabilities,
    events: Stream.fromQueue(events),
    configured,
    updateSession: (changes) =>
      Effect.gen(function*() {
        yield* checkToolChoice(changes.toolChoice, changes.tools ?? desired.tools)
        if (changes.instructions === undefined && changes.tools === undefined && changes.toolChoice === undefined) {
          return writtenAck
        }
        return yield* withAck("session.update", (live) => {
          const session: Record<string, unknown> = {}
          if (changes.instructions !== undefined) session.instructions = desired.instructions = changes.instructions
          if (changes.tools !== undefined) session.tools = toWireTools(desired.tools = changes.tools)
          if (changes.toolChoice !== undefined) session.tool_choice = toWireToolChoice(desired.toolChoice = changes.toolChoice)
          const eventId = nextEventId()
          const entry = acks.registerOrderedUnsafe(
            "session.update",
            eventId,
            SESSION_CHANNEL,
            sessionMatches({
              instructions: changes.instructions,
              toolNames: changes.tools?.map((t) => t.name),
              toolChoice: session.tool_choice
            })
          )
          send(live, ClientEvents.sessionUpdate(eventId, session))
          return [entry]
        })
      }),
    updateChatContext: (context) =>
      withAck("updateChatContext", (live) => {
        const plan = diffChatContext(held.list(), context, ids)
        for (const [baton, provider] of plan.aliases) ids.alias(baton, provider)
        const entries: Array<PendingAck> = []
        for (const itemId of plan.deletes) {
          const eventId = nextEventId()
          entries.push(acks.registerKeyUnsafe(`conversation.item.delete ${itemId}`, eventId, deleteKey(itemId)))
          held.remove(itemId)
          send(live, ClientEvents.itemDelete(eventId, itemId))
        }
        for (const c of plan.creates) {
          const eventId = nextEventId()
          entries.push(
            acks.registerKeyUnsafe(`conversation.item.create ${c.batonId}`, eventId, itemKey(c.item.id), () => held.remove(c.item.id))
          )
          held.put(heldFromClient(c.item), c.previousItemId)
          send(live, ClientEvents.itemCreate(eventId, c.item, c.previousItemId))
        }
        return entries
      }),
    sendToolOutput: (output) =>
      withAck("sendToolOutput", (live) => {
        const itemId = ids.toProvider(`out_${output.callId}`)
        const item: ClientItem = {
          id: itemId,
          type: "function_call_output",
          call_id: output.callId,
          output: toolOutputText(output.output, output.isError)
        }
        return [createItemUnsafe(live, item, undefined, `output of ${output.name} (${output.callId})`)]
      }),
    createResponse: (options = {}) =>
      Effect.gen(function*() {
        yield* checkToolChoice(options.toolChoice, desired.tools)
        yield* exec("response.create", (live) => {
          const response: Record<string, unknown> = {}
          if (options.instructions !== undefined) {
            response.instructions = desired.instructions === ""
              ? options.instructions
              : `${desired.instructions}\n\n${options.instructions}`
          }
          if (options.toolChoice !== undefined) response.tool_choice = toWireToolChoice(options.toolChoice)
          send(live, ClientEvents.responseCreate(nextEventId(), response))
        })
      }),
    cancelResponse: (responseId) =>
      exec("response.cancel", (live) => void send(live, ClientEvents.responseCancel(nextEventId(), responseId))),
    truncate: (itemId, audioEndMs) =>
      exec("conversation.item.truncate", (live) => {
        const providerId = ids.toProvider(itemId)
        if (audioEndMs <= 0) {
          // nothing was played: the API refuses a truncation at 0, so the item goes
          held.remove(providerId)
          send(live, ClientEvents.itemDelete(nextEventId(), providerId))
        } else {
          send(live, ClientEvents.itemTruncate(nextEventId(), providerId, Math.floor(audioEndMs)))
        }
      }),
    pushAudio: (pcm) =>
      exec("input_audio_buffer.append", (live) => {
        for (let offset = 0; offset < pcm.byteLength; offset += MAX_APPEND_BYTES) {
          const chunk = pcm.subarray(offset, offset + MAX_APPEND_BYTES)
          send(live, ClientEvents.audioAppend(nextEventId(), Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("base64")))
        }
      }),
    commitAudio: exec("input_audio_buffer.commit", (live) => void send(live, ClientEvents.audioCommit(nextEventId()))),
    clearAudio: exec("input_audio_buffer.clear", (live) => void send(live, ClientEvents.audioClear(nextEventId())))
  }
  return connection
})
