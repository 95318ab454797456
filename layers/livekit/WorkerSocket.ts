/**
 * One connection of the worker to the server's dispatch (`/agent`), through Effect's socket
 * (`effect/socket/Socket`, `fromWebSocket`): the handshake carries the worker's token, frames are
 * pulled in order, frames to send go through an outbox written by one fiber, and everything (the
 * socket's listeners, the pong listener, the fibers) belongs to the caller's Scope, so nothing
 * outlives the connection: closing the Scope removes the listeners and terminates the socket.
 *
 * The socket comes from `Socket.WebSocketConstructor` when the context has one, else from `ws`
 * (`@effect/platform-node/NodeWS`), which can send the `Authorization` header.
 *
 * Liveness: a connection that died without a close (half-open) sends nothing and fails no write.
 * Every `interval` the socket is pinged (a WebSocket ping); when neither a pong nor a frame came
 * within `timeout`, the connection is lost. Timed on the `Clock`.
 */
import { WebSocket as NodeWebSocket } from "@effect/platform-node/NodeWS"
import { Clock, Duration, Effect, Option, Queue, Redacted } from "effect"
import type { NonEmptyReadonlyArray } from "effect/Array"
import * as Socket from "effect/socket/Socket"
import type { Liveness } from "../shared/Liveness.ts"
import { WorkerError } from "./WorkerError.ts"

/**
 * An open connection.
 *
 * @since 0.1.0
 * @category models
 */
export interface WorkerSocket {
  /** The next frames from the server; fails with a `WorkerError` (`Lost`) when the connection ends. */
  readonly pull: Effect.Effect<NonEmptyReadonlyArray<Uint8Array | string>, WorkerError>
  /** Frames to send, written in order; dropped once the connection has closed. */
  readonly outbox: Queue.Queue<Uint8Array>
  /** Fails with a `WorkerError` (`Lost`) when the server stops answering pings; never succeeds. */
  readonly silent: Effect.Effect<never, WorkerError>
}

type Pingable = Socket.WebSocketLike & {
  ping: () => void
  on: (event: "pong", listener: () => void) => void
  off: (event: "pong", listener: () => void) => void
}
const isPingable = (ws: Socket.WebSocketLike): ws is Pingable =>
  typeof (ws as Partial<Pingable>).ping === "function" && typeof (ws as Partial<Pingable>).on === "function"

/** `ws`, which sends handshake headers (Node's global WebSocket would too, but cannot ping). */
const nodeWs = (url: string, options?: Socket.WebSocketConstructorOptions): Socket.WebSocketLike =>
  typeof options === "object" && !Array.isArray(options)
    ? new NodeWebSocket(url, options.protocols, { headers: options.headers })
    : new NodeWebSocket(url, options)

/** A lost connection is gone: terminate (no close handshake to wait for) where the socket can. */
const hangUp = (ws: Socket.WebSocketLike) => {
  const terminate = (ws as { terminate?: () => void }).terminate
  if (typeof terminate === "function") terminate.call(ws)
  else ws.close()
}

const messageOf = (cause: unknown): string =>
  cause instanceof Error ? cause.message : typeof (cause as { message?: unknown })?.message === "string" ? (cause as { message: string }).message : String(cause)

/** What ended or refused the connection, in words. */
export const describe = (error: Socket.SocketError): string => {
  const reason = error.reason
  switch (reason._tag) {
    case "SocketCloseError":
      return `closed (${reason.code}${reason.closeReason ? `: ${reason.closeReason}` : ""})`
    case "SocketOpenError":
      return reason.kind === "Timeout" ? "no answer to the handshake in time" : `cannot connect: ${messageOf(reason.cause)}`
    default:
      return `${reason.message}${"cause" in reason && reason.cause !== undefined ? `: ${messageOf(reason.cause)}` : ""}`
  }
}

/**
 * Opens a connection to `url` with `token` in the caller's Scope; fails with a `WorkerError`
 * (`Connect`) when it cannot be opened.
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = Effect.fnUntraced(function*(url: string, token: Redacted.Redacted<string>, liveness: Liveness) {
  const makeWs = Option.getOrElse(yield* Effect.serviceOption(Socket.WebSocketConstructor), () => nodeWs)
  const clock = yield* Clock.Clock
  /** The socket of this connection, and when the server was last heard from (Clock ms). */
  const link: { ws: Socket.WebSocketLike | undefined; heardAt: number } = { ws: undefined, heardAt: clock.currentTimeMillisUnsafe() }
  const heard = () => void (link.heardAt = clock.currentTimeMillisUnsafe())
  const socket = yield* Socket.fromWebSocket(
    Effect.acquireRelease(
      Effect.try({
        try: () => makeWs(url, { headers: { Authorization: `Bearer ${Redacted.value(token)}` } }),
        catch: (cause) => new Socket.SocketError({ reason: new Socket.SocketOpenError({ kind: "Unknown", cause }) })
      }),
      (ws) => Effect.sync(() => hangUp(ws))
    ).pipe(Effect.tap((ws) => Effect.sync(() => void (link.ws = ws))))
  )
  const reader = yield* socket.reader.pipe(
    Effect.mapError((error) => new WorkerError({ reason: "Connect", message: `${url}: ${describe(error)}` }))
  )
  const writer = yield* socket.writer

  const outbox = yield* Queue.unbounded<Uint8Array>()
  yield* Effect.forkScoped(Effect.forever(Queue.take(outbox).pipe(Effect.flatMap((bytes) => Effect.ignore(writer.write(bytes))))))
  // Runs before the socket is closed (added after it): what is still queued is written, then the
  // outbox refuses more (a worker draining says "full" over this connection as it leaves).
  yield* Effect.addFinalizer(() =>
    Queue.clear(outbox).pipe(
      Effect.flatMap((left) => (left.length > 0 ? Effect.ignore(writer.writeAll(left as unknown as NonEmptyReadonlyArray<Uint8Array>)) : Effect.void)),
      Effect.andThen(Queue.shutdown(outbox))
    )
  )

  const ws = link.ws
  if (ws !== undefined && isPingable(ws)) {
    yield* Effect.acquireRelease(Effect.sync(() => ws.on("pong", heard)), () => Effect.sync(() => ws.off("pong", heard)))
  }

  const interval = Duration.fromInputUnsafe(liveness.interval)
  const timeout = Duration.fromInputUnsafe(liveness.timeout)
  const silent = Effect.gen(function*() {
    for (;;) {
      yield* Effect.sleep(interval)
      const sentAt = yield* Clock.currentTimeMillis
      if (ws !== undefined && isPingable(ws) && ws.readyState === 1) {
        try {
          ws.ping()
        } catch {
          // a socket closing under the ping: the reader reports the close
        }
      }
      yield* Effect.sleep(timeout)
      if (link.heardAt < sentAt) {
        return yield* new WorkerError({
          reason: "Lost",
          message: `${url}: no answer to a ping in ${Duration.toMillis(timeout)} ms (a half-open connection)`
        })
      }
    }
  })

  return {
    pull: reader.pull.pipe(
      Effect.tap(() => Effect.sync(heard)),
      Effect.mapError((error) => new WorkerError({ reason: "Lost", message: `${url}: ${describe(error)}` }))
    ),
    outbox,
    silent
  } satisfies WorkerSocket
})
