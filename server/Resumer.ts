/**
 * The one place a resume token becomes a session again. It looks in this process's live calls
 * first (a session whose client went away is kept there for `resumeSeconds`); with a durable
 * store, a session that is not here (its process crashed, was drained, or is another node of the
 * fleet) is claimed from the store and resumed on this node (`restoreWith`), behind the same
 * answer: the transports see a `Found` call either way.
 */
import { Clock, Deferred, Effect, type Redacted } from "effect"
import type { Call } from "./Call.ts"
import { drainingReason, sessionLimitReason } from "./Limits.ts"
import * as Token from "./Token.ts"

/** Why a token resumes nothing, and what the client is told (its WebSocket close code and reason).
 * `full` and `draining`: the session would be restored from the store, and this process takes no
 * more sessions (`BATON_MAX_SESSIONS`), as it would refuse a new call. */
export interface Refused {
  readonly _tag: "Refused"
  readonly reason: Token.ResumeRefusal | "store failed" | "full" | "draining"
  readonly code: number
  readonly message: string
}

/** The route a client resumes on: a session restored from the store is set up for it (a phone
 * line's framing and call control on `twilio`, the page's text and moves on `ws`). */
export type Transport = "ws" | "twilio"

export interface Found {
  readonly _tag: "Found"
  readonly call: Call
}

export interface Resumer {
  /** Keeps `call` findable by its session id until the returned effect runs. */
  readonly add: (call: Call) => Effect.Effect<void>
  readonly remove: (call: Call) => Effect.Effect<void>
  /** The live call the token resumes (restored from the store for `transport` when it is not
   * live here), or why there is none. */
  readonly reattach: (token: string, transport: Transport) => Effect.Effect<Found | Refused>
  /** Whether resuming with `token` would restore its session from the store (a good token for a
   * session not live here): that takes a slot of `BATON_MAX_SESSIONS`; a live one holds its own. */
  readonly wouldRestore: (token: string, nowMs: number) => boolean
  /** The live call of a session, if this process holds it. */
  readonly find: (sessionId: string) => Call | undefined
  /** Sessions held here now (attached or waiting for their client). */
  readonly size: () => number
  /** Those sessions' calls, oldest first (the operator's desk lists them). */
  readonly list: () => ReadonlyArray<Call>
  /** With a durable store: how a session not live here is resumed from it (set once, at start). */
  readonly restoreWith: (restore: Restore) => void
}

/** Resumes session `sessionId` from the store on this node, as a live call for `transport` (already
 * `add`ed), or says why it cannot be. */
export type Restore = (sessionId: string, transport: Transport) => Effect.Effect<Found | Refused>

/** Close codes in the application range: 4400 for a token that is not one, 4401 for one no longer
 * (or never) good, 4404 for a session that is gone. */
export const refusal = (reason: Token.ResumeRefusal | "store failed"): Refused => {
  switch (reason) {
    case "malformed":
      return { _tag: "Refused", reason, code: 4400, message: "resume token malformed: start a new session" }
    case "bad signature":
      return { _tag: "Refused", reason, code: 4401, message: "resume token not signed by this service: start a new session" }
    case "expired":
      return { _tag: "Refused", reason, code: 4401, message: "resume token expired: start a new session" }
    case "unknown session":
      return { _tag: "Refused", reason, code: 4404, message: "the session ended or is not here: start a new session" }
    case "store failed":
      return { _tag: "Refused", reason, code: 1011, message: "the session store failed: try to resume again" }
  }
}

/**
 * A restore this process has no slot for, refused as a new call would be, in WebSocket terms
 * (a new /ws call is refused before its upgrade with 503 and the same words): 1013 "try again
 * later" at the limit, 1012 "service restart" while draining. Neither is a 44xx: the client
 * tries again, and a load balancer may send it to another node.
 */
export const unadmitted = (why: "full" | "draining", maxSessions: number): Refused =>
  why === "full"
    ? { _tag: "Refused", reason: why, code: 1013, message: sessionLimitReason(maxSessions) }
    : { _tag: "Refused", reason: why, code: 1012, message: drainingReason }

export const make = (secret: Redacted.Redacted<string>): Resumer => {
  const live = new Map<string, Call>()
  let restore: Restore | undefined
  /** Restores in progress, by session id: a second token for the same session waits for the first. */
  const restoring = new Map<string, Deferred.Deferred<Found | Refused>>()
  const fromStore = (sessionId: string, transport: Transport): Effect.Effect<Found | Refused> =>
    Effect.suspend(() => {
      const pending = restoring.get(sessionId)
      if (pending) return Deferred.await(pending)
      if (!restore) return Effect.succeed(refusal("unknown session"))
      const done = Deferred.makeUnsafe<Found | Refused>()
      restoring.set(sessionId, done)
      return restore(sessionId, transport).pipe(
        Effect.tap((answer) => Deferred.succeed(done, answer)),
        Effect.ensuring(Effect.sync(() => void restoring.delete(sessionId)))
      )
    })
  return {
    add: (call) => Effect.sync(() => void live.set(call.id, call)),
    remove: (call) => Effect.sync(() => void (live.get(call.id) === call && live.delete(call.id))),
    reattach: (token, transport) =>
      Effect.flatMap(Clock.currentTimeMillis, (now): Effect.Effect<Found | Refused> => {
        const verdict = Token.verifyResume(secret, token, now)
        if (verdict._tag === "refused") return Effect.succeed(refusal(verdict.reason))
        const call = live.get(verdict.sessionId)
        if (call) return Effect.succeed(Deferred.isDoneUnsafe(call.ended) ? refusal("unknown session") : { _tag: "Found", call })
        // Not held here: a durable store may have it (another process wrote it last).
        return fromStore(verdict.sessionId, transport)
      }),
    wouldRestore: (token, nowMs) => {
      const verdict = Token.verifyResume(secret, token, nowMs)
      return verdict._tag !== "refused" && restore !== undefined && !live.has(verdict.sessionId)
    },
    find: (sessionId) => live.get(sessionId),
    size: () => live.size,
    list: () => [...live.values()],
    restoreWith: (r) => void (restore = r)
  }
}
