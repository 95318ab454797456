/**
 * The Effect-facing API common to both mocks: acquiring a server in a Scope, waiting for
 * connections / frames / closes (live clock), and the base connection handle.
 */
import { Data, Effect, type Scope } from "effect"
import type { CloseInfo, ConnectInfo, MockConnection } from "./connection.ts"
import { type Fault, type FrameMatcher, frameMatches, type MalformedKind, type RecordedFrame, type Trigger } from "./rules.ts"
import type { MockServer } from "./server.ts"

export class MockServerError extends Data.TaggedError("MockServerError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export class MockTimeoutError extends Data.TaggedError("MockTimeoutError")<{
  readonly waitingFor: string
  readonly timeoutMs: number
}> {}

export const DEFAULT_WAIT_MS = 5_000

export interface WaitOptions {
  /** Give up after this long (default 5 s), failing with `MockTimeoutError`. */
  readonly timeoutMs?: number
  /** Only consider frames with `seq >= fromSeq` (default 0: frames already recorded count). */
  readonly fromSeq?: number
}

/** Acquires `server` (listening on 127.0.0.1, port 0) in the current Scope; stops it on release. */
export const acquireServer = <S extends MockServer<any, any, any>>(
  name: string,
  make: () => S
): Effect.Effect<S, MockServerError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const server = make()
        await server.start()
        return server
      },
      catch: (cause) => new MockServerError({ message: `${name}: failed to start`, cause })
    }),
    (server) => Effect.promise(() => server.stop())
  )

/** Waits until `check` returns a value; re-checked whenever the server records something. */
export const waitUntil = <T>(
  server: MockServer<any, any, any>,
  check: () => T | undefined,
  waitingFor: string,
  timeoutMs = DEFAULT_WAIT_MS
): Effect.Effect<T, MockTimeoutError> =>
  Effect.callback<T, MockTimeoutError>((resume) => {
    const first = check()
    if (first !== undefined) return resume(Effect.succeed(first))
    let done = false
    const finish = (effect: Effect.Effect<T, MockTimeoutError>) => {
      if (done) return
      done = true
      unsubscribe()
      clearTimeout(timer)
      resume(effect)
    }
    const unsubscribe = server.subscribe(() => {
      const value = check()
      if (value !== undefined) finish(Effect.succeed(value))
    })
    const timer = setTimeout(() => finish(Effect.fail(new MockTimeoutError({ waitingFor, timeoutMs }))), timeoutMs)
    return Effect.sync(() => {
      done = true
      unsubscribe()
      clearTimeout(timer)
    })
  })

export interface ConnectionHandle<E, R, A> {
  readonly index: number
  readonly info: ConnectInfo
  /** Negotiated subprotocol ("" if none). */
  readonly protocol: string
  /** Every client frame received so far, in order (a snapshot). */
  readonly received: () => ReadonlyArray<RecordedFrame>
  /** Types of the client frames received so far. */
  readonly receivedTypes: () => ReadonlyArray<string>
  /** Every server frame sent so far, noise included (`frame.noise`). */
  readonly sent: () => ReadonlyArray<RecordedFrame>
  /** Types of the protocol (non-noise) server frames sent so far. */
  readonly sentTypes: () => ReadonlyArray<string>
  readonly isOpen: () => boolean
  readonly closeInfo: () => CloseInfo | undefined
  readonly awaitReceived: (match: FrameMatcher, options?: WaitOptions) => Effect.Effect<RecordedFrame, MockTimeoutError>
  readonly awaitSent: (match: FrameMatcher, options?: WaitOptions) => Effect.Effect<RecordedFrame, MockTimeoutError>
  readonly awaitClose: (options?: WaitOptions) => Effect.Effect<CloseInfo, MockTimeoutError>
  /** Runs protocol actions now, in order. */
  readonly perform: (...actions: ReadonlyArray<A>) => Effect.Effect<void>
  readonly addFault: (fault: Fault<E, R>) => Effect.Effect<void>
  readonly addTrigger: (trigger: Trigger<E, A>) => Effect.Effect<void>
  /** Sends any protocol message as is (OpenAI: `event_id` added when missing). */
  readonly send: (message: object) => Effect.Effect<void>
  /** Sends a raw frame (text unless `binary`). */
  readonly sendRaw: (data: string | Uint8Array, options?: { readonly binary?: boolean }) => Effect.Effect<void>
  /** Sends one unknown event or malformed frame. */
  readonly sendNoise: (kind: "unknown" | MalformedKind) => Effect.Effect<void>
  /** Closes with a close frame (code 1000 by default; 1006 means a TCP drop). */
  readonly close: (code?: number, reason?: string) => Effect.Effect<void>
  /** Drops the TCP connection without a close frame. */
  readonly terminate: Effect.Effect<void>
  /** From now on nothing reaches the client (no frame, no pong) and client frames are recorded
   * but not answered: a half-open connection. */
  readonly mute: Effect.Effect<void>
  /** Liveness pings the client sent so far. */
  readonly pings: () => number
}

const findFrame = (frames: ReadonlyArray<RecordedFrame>, match: FrameMatcher, fromSeq: number) =>
  frames.find((f) => f.seq >= fromSeq && frameMatches(match, f))

export const makeConnectionHandle = <E, R, A>(
  server: MockServer<E, R, A>,
  conn: MockConnection<E, R, A>
): ConnectionHandle<E, R, A> => ({
  index: conn.index,
  info: conn.info,
  protocol: conn.selectedProtocol,
  received: () => [...conn.received],
  receivedTypes: () => conn.received.map((f) => f.type ?? "<invalid>"),
  sent: () => [...conn.sent],
  sentTypes: () => conn.sent.filter((f) => !f.noise).map((f) => f.type ?? "<invalid>"),
  isOpen: () => conn.isOpen,
  closeInfo: () => conn.closeInfo,
  awaitReceived: (match, options) =>
    waitUntil(
      server,
      () => findFrame(conn.received, match, options?.fromSeq ?? 0),
      `client frame ${String(match)} on connection ${conn.index}`,
      options?.timeoutMs
    ),
  awaitSent: (match, options) =>
    waitUntil(
      server,
      () => findFrame(conn.sent, match, options?.fromSeq ?? 0),
      `server frame ${String(match)} on connection ${conn.index}`,
      options?.timeoutMs
    ),
  awaitClose: (options) =>
    waitUntil(server, () => conn.closeInfo, `close of connection ${conn.index}`, options?.timeoutMs),
  perform: (...actions) =>
    Effect.sync(() => {
      for (const a of actions) conn.guard(() => conn.protocol.perform(a))
    }),
  addFault: (fault) => Effect.sync(() => conn.faults.add(fault)),
  addTrigger: (trigger) => Effect.sync(() => conn.triggers.add(trigger)),
  send: (message) => Effect.sync(() => void conn.send(message)),
  sendRaw: (data, options) => Effect.sync(() => void conn.sendRaw(data, options?.binary ?? typeof data !== "string")),
  sendNoise: (kind) => Effect.sync(() => conn.sendNoise(kind)),
  close: (code, reason) => Effect.sync(() => conn.close(code, reason)),
  terminate: Effect.sync(() => conn.terminate()),
  pings: () => conn.pings,
  mute: Effect.sync(() => {
    conn.muted = true
  })
})

export interface ServerHandle<E, R, A, C> {
  /** `ws://127.0.0.1:<port>` (no path). */
  readonly origin: string
  readonly port: number
  /** Established WebSocket connections so far (refused handshakes excluded). */
  readonly connectionCount: () => number
  /** Every upgrade request, refused ones included. */
  readonly handshakeAttempts: () => number
  readonly connections: () => ReadonlyArray<C>
  /** Waits for connection number `index` (from 0) to be established. */
  readonly awaitConnection: (index: number, options?: WaitOptions) => Effect.Effect<C, MockTimeoutError>
  /** Adds a fault for every connection, current and future. */
  readonly addFault: (fault: Fault<E, R>) => Effect.Effect<void>
  /** Adds a trigger shared by every connection. */
  readonly addTrigger: (trigger: Trigger<E, A>) => Effect.Effect<void>
  /** Exceptions thrown inside the mock (a test may assert this stays empty). */
  readonly internalErrors: () => ReadonlyArray<unknown>
}

export const makeServerHandle = <E, R, A, C>(
  server: MockServer<E, R, A>,
  wrap: (conn: MockConnection<E, R, A>) => C
): ServerHandle<E, R, A, C> => {
  const cache = new WeakMap<MockConnection<E, R, A>, C>()
  const handleOf = (conn: MockConnection<E, R, A>): C => {
    const cached = cache.get(conn)
    if (cached !== undefined) return cached
    const made = wrap(conn)
    cache.set(conn, made)
    return made
  }
  return {
    origin: `ws://127.0.0.1:${server.port}`,
    port: server.port,
    connectionCount: () => server.connections.length,
    handshakeAttempts: () => server.handshakeAttempts,
    connections: () => server.connections.map(handleOf),
    awaitConnection: (index, options) =>
      waitUntil(
        server,
        () => {
          const conn = server.connections[index]
          return conn === undefined ? undefined : handleOf(conn)
        },
        `connection ${index}`,
        options?.timeoutMs
      ),
    addFault: (fault) => Effect.sync(() => server.globalFaults.add(fault)),
    addTrigger: (trigger) => Effect.sync(() => server.globalTriggers.add(trigger)),
    internalErrors: () => [...server.internalErrors]
  }
}
