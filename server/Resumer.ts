/**
 * The one place a resume token becomes a session again. Today it looks in this process's live
 * calls (a session whose client went away is kept there for `resumeSeconds`); with a durable
 * store it will, when the call is not here, claim the session from the store and resume it
 * (`AgentSession.resume`) on this node: that fallback goes in `reattach`, behind the same
 * answer, and nothing else in the server changes.
 */
import { Clock, Deferred, Effect, type Redacted } from "effect"
import type { Call } from "./Call.ts"
import * as Token from "./Token.ts"

/** Why a token resumes nothing, and what the client is told (its WebSocket close code and reason). */
export interface Refused {
  readonly _tag: "Refused"
  readonly reason: Token.ResumeRefusal
  readonly code: number
  readonly message: string
}

export interface Found {
  readonly _tag: "Found"
  readonly call: Call
}

export interface Resumer {
  /** Keeps `call` findable by its session id until the returned effect runs. */
  readonly add: (call: Call) => Effect.Effect<void>
  readonly remove: (call: Call) => Effect.Effect<void>
  /** The live call the token resumes, or why there is none. */
  readonly reattach: (token: string) => Effect.Effect<Found | Refused>
  /** The live call of a session, if this process holds it. */
  readonly find: (sessionId: string) => Call | undefined
  /** Sessions held here now (attached or waiting for their client). */
  readonly size: () => number
}

/** Close codes in the application range: 4400 for a token that is not one, 4401 for one no longer
 * (or never) good, 4404 for a session that is gone. */
export const refusal = (reason: Token.ResumeRefusal): Refused => {
  switch (reason) {
    case "malformed":
      return { _tag: "Refused", reason, code: 4400, message: "resume token malformed: start a new session" }
    case "bad signature":
      return { _tag: "Refused", reason, code: 4401, message: "resume token not signed by this service: start a new session" }
    case "expired":
      return { _tag: "Refused", reason, code: 4401, message: "resume token expired: start a new session" }
    case "unknown session":
      return { _tag: "Refused", reason, code: 4404, message: "the session ended or is not here: start a new session" }
  }
}

export const make = (secret: Redacted.Redacted<string>): Resumer => {
  const live = new Map<string, Call>()
  return {
    add: (call) => Effect.sync(() => void live.set(call.id, call)),
    remove: (call) => Effect.sync(() => void (live.get(call.id) === call && live.delete(call.id))),
    reattach: (token) =>
      Effect.map(Clock.currentTimeMillis, (now): Found | Refused => {
        const verdict = Token.verifyResume(secret, token, now)
        if (verdict._tag === "refused") return refusal(verdict.reason)
        const call = live.get(verdict.sessionId)
        // A durable store's fallback goes here: claim `verdict.sessionId` and resume it on this node.
        return call && !Deferred.isDoneUnsafe(call.ended) ? { _tag: "Found", call } : refusal("unknown session")
      }),
    find: (sessionId) => live.get(sessionId),
    size: () => live.size
  }
}
