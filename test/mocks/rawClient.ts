/**
 * A raw `ws` client for the mock tests: connects in a Scope, records every server frame, and reads
 * them in order with timeouts (live clock).
 */
import { Data, Effect, type Scope } from "effect"
import { WebSocket } from "ws"

// Wire messages are untyped JSON; tests index into them freely.
export type Msg = Record<string, any>

export interface Received {
  readonly atMs: number
  readonly raw: string
  readonly binary: boolean
  /** Parsed JSON object, or undefined for malformed frames. */
  readonly msg: Msg | undefined
}

export class ClientError extends Data.TaggedError("ClientError")<{ readonly message: string; readonly status?: number }> {}

export interface RawClient {
  readonly ws: WebSocket
  /** performance.now() when connect() was called, and when the socket opened. */
  readonly startedAt: number
  readonly openedAt: number
  readonly frames: ReadonlyArray<Received>
  readonly send: (message: unknown) => Effect.Effect<void>
  readonly sendRaw: (data: string | Uint8Array, binary?: boolean) => Effect.Effect<void>
  /** The next unread frame. */
  readonly next: (timeoutMs?: number) => Effect.Effect<Received, ClientError>
  /**
   * Unread JSON messages up to and including the first match (by OpenAI `type`, by Gemini top-level
   * key, or by predicate). Malformed frames are skipped.
   */
  readonly until: (match: string | ((m: Msg) => boolean), timeoutMs?: number) => Effect.Effect<Array<Msg>, ClientError>
  /** The first unread JSON message matching (earlier unread messages are consumed). */
  readonly waitFor: (match: string | ((m: Msg) => boolean), timeoutMs?: number) => Effect.Effect<Msg, ClientError>
  /** Waits for the close; `code` 1006 for a TCP drop. */
  readonly closed: (timeoutMs?: number) => Effect.Effect<{ readonly code: number; readonly reason: string }, ClientError>
  readonly close: (code?: number) => Effect.Effect<void>
}

export const msgMatches = (match: string | ((m: Msg) => boolean), m: Msg): boolean =>
  typeof match === "string" ? m.type === match || (m.type === undefined && match in m) : match(m)

export const connect = (
  url: string,
  options: { readonly protocols?: ReadonlyArray<string>; readonly headers?: Record<string, string> } = {}
): Effect.Effect<RawClient, ClientError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<RawClient, ClientError>((resume) => {
      const startedAt = performance.now()
      const ws = new WebSocket(url, options.protocols ? [...options.protocols] : [], { headers: options.headers ?? {} })
      const frames: Array<Received> = []
      let cursor = 0
      let closeInfo: { code: number; reason: string } | undefined
      const listeners = new Set<() => void>()
      const notify = () => {
        for (const l of [...listeners]) l()
      }
      ws.on("message", (data, binary) => {
        const raw = Buffer.isBuffer(data) ? data.toString("utf8") : Buffer.from(data as ArrayBuffer).toString("utf8")
        let msg: Msg | undefined
        try {
          const parsed: unknown = JSON.parse(raw)
          msg = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Msg) : undefined
        } catch {
          msg = undefined
        }
        frames.push({ atMs: performance.now() - startedAt, raw, binary, msg })
        notify()
      })
      ws.on("close", (code, reason) => {
        closeInfo = { code, reason: reason.toString("utf8") }
        notify()
      })
      const waitFor = <A>(check: () => A | undefined, what: string, timeoutMs: number) =>
        Effect.callback<A, ClientError>((done) => {
          const first = check()
          if (first !== undefined) return done(Effect.succeed(first))
          const listener = () => {
            const v = check()
            if (v !== undefined) {
              cleanup()
              done(Effect.succeed(v))
            }
          }
          const timer = setTimeout(() => {
            cleanup()
            done(Effect.fail(new ClientError({ message: `timed out after ${timeoutMs} ms waiting for ${what}` })))
          }, timeoutMs)
          const cleanup = () => {
            listeners.delete(listener)
            clearTimeout(timer)
          }
          listeners.add(listener)
          return Effect.sync(cleanup)
        })
      const client: Omit<RawClient, "openedAt"> = {
        ws,
        startedAt,
        frames,
        send: (message) => Effect.sync(() => ws.send(JSON.stringify(message))),
        sendRaw: (data, binary = typeof data !== "string") => Effect.sync(() => ws.send(data, { binary })),
        next: (timeoutMs = 3000) =>
          waitFor(() => (cursor < frames.length ? frames[cursor++] : undefined), "the next frame", timeoutMs),
        until: (match, timeoutMs = 3000) =>
          waitFor(() => {
            for (let i = cursor; i < frames.length; i++) {
              const m = frames[i]!.msg
              if (m !== undefined && msgMatches(match, m)) {
                const out = frames.slice(cursor, i + 1).flatMap((f) => (f.msg ? [f.msg] : []))
                cursor = i + 1
                return out
              }
            }
            return undefined
          }, `message ${String(match)}`, timeoutMs),
        waitFor: (match, timeoutMs = 3000) => client.until(match, timeoutMs).pipe(Effect.map((msgs) => msgs.at(-1)!)),
        closed: (timeoutMs = 3000) => waitFor(() => closeInfo, "close", timeoutMs),
        close: (code = 1000) => Effect.sync(() => ws.close(code))
      }
      ws.once("open", () => resume(Effect.succeed({ ...client, openedAt: performance.now() })))
      ws.once("unexpected-response", (req, res) => {
        req.destroy()
        resume(Effect.fail(new ClientError({ message: `HTTP ${res.statusCode}`, status: res.statusCode ?? 0 })))
      })
      ws.once("error", (error) => resume(Effect.fail(new ClientError({ message: String(error) }))))
      return Effect.sync(() => ws.terminate())
    }),
    (client) =>
      Effect.sync(() => {
        if (client.ws.readyState === WebSocket.OPEN || client.ws.readyState === WebSocket.CONNECTING) client.ws.terminate()
      })
  )

/** The `type` of each message (OpenAI). */
export const typesOf = (msgs: ReadonlyArray<Msg>): Array<string> => msgs.map((m) => String(m.type))

/** Collapses runs of the same entry: ["a", "d", "d", "b"] -> ["a", "d", "b"]. */
export const squash = (xs: ReadonlyArray<string>): Array<string> => xs.filter((x, i) => x !== xs[i - 1])

/** A Gemini message's kind: its top-level key, refined for serverContent / realtimeInput. */
export const geminiKind = (m: Msg): string => {
  if (m.serverContent !== undefined) {
    const sc = m.serverContent
    const subs = ["interrupted", "modelTurn", "outputTranscription", "inputTranscription", "generationComplete", "turnComplete"]
      .filter((k) => sc[k] !== undefined)
    return `serverContent.${subs.join("+")}${m.usageMetadata !== undefined ? "+usageMetadata" : ""}`
  }
  return Object.keys(m).join("+")
}
