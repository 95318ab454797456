/**
 * Short-lived access tokens for the session routes: `<route>.<expiry seconds>.<HMAC-SHA256 of
 * "<route>.<expiry>", base64url>`, signed with the service's shared secret. A browser gets one
 * from `POST /token` (which needs the secret itself) and never holds the secret. A token is
 * exact (nothing before or after it, the one encoding of its signature), opens only the route
 * it was minted for, and may be used again until it expires. The secret itself is never a
 * token. Comparisons are constant-time, whatever the lengths.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import { Redacted } from "effect"

/**
 * The routes a token may open: `ws` (a caller), `twilio`, and `operator` (the operator's desk, a
 * role a caller's token does not carry).
 *
 * @since 0.1.0
 * @category constants
 */
export const routes = ["ws", "twilio", "operator"] as const
/**
 * A route a token may open.
 *
 * @since 0.1.0
 * @category models
 */
export type Route = typeof routes[number]

/**
 * Whether `name` is a route a token may open.
 *
 * @since 0.1.0
 * @category guards
 */
export const isRoute = (name: string): name is Route => (routes as ReadonlyArray<string>).includes(name)

const sign = (secret: Redacted.Redacted<string>, payload: string) =>
  createHmac("sha256", Redacted.value(secret)).update(payload).digest("base64url")

/**
 * A token for `route`, valid for `ttlSeconds` from `nowMs`, signed with `secret`, with its expiry
 * (seconds since the epoch).
 *
 * @since 0.1.0
 * @category constructors
 */
export const mint = (
  secret: Redacted.Redacted<string>,
  ttlSeconds: number,
  nowMs: number,
  route: Route = "ws"
): { token: string; route: Route; expiresAt: number } => {
  const expiresAt = Math.floor(nowMs / 1000) + ttlSeconds
  const payload = `${route}.${expiresAt}`
  return { token: `${payload}.${sign(secret, payload)}`, route, expiresAt }
}

/**
 * What `verify` says of a token: valid, or why not.
 *
 * @since 0.1.0
 * @category models
 */
export type Verdict = "ok" | "malformed" | "bad signature" | "expired" | "for another route"

/** A SHA-256 signature in base64url is 43 characters, its last one carrying 4 bits. */
const shape = /^([a-z]+)\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/

/**
 * Checks `token` for `route` at `nowMs`: its shape, its signature (constant-time), its route and
 * its expiry.
 *
 * @since 0.1.0
 * @category utils
 */
export const verify = (secret: Redacted.Redacted<string>, token: string, route: Route, nowMs: number): Verdict => {
  const parts = shape.exec(token)
  if (parts === null || !isRoute(parts[1]!)) return "malformed"
  const [, scope, expiry, signature] = parts as unknown as [string, Route, string, string]
  // Compared as text: the one encoding of the signature is accepted, never one base64 decodes alike.
  if (!timingSafeEqual(Buffer.from(signature), Buffer.from(sign(secret, `${scope}.${expiry}`)))) return "bad signature"
  if (scope !== route) return "for another route"
  return Number(expiry) * 1000 < nowMs ? "expired" : "ok"
}

const digest = (text: string) => createHash("sha256").update(text).digest()

/**
 * Whether `candidate` is the shared secret (for `POST /token` only): no early answer on length.
 *
 * @since 0.1.0
 * @category utils
 */
export const isSecret = (secret: Redacted.Redacted<string>, candidate: string): boolean =>
  timingSafeEqual(digest(Redacted.value(secret)), digest(candidate))

/**
 * Resume tokens: `resume.<sessionId>.<expiry seconds>.<HMAC-SHA256 of "resume.<sessionId>.<expiry>">`,
 * signed with the same secret as the access tokens (a process without `BATON_TOKEN` signs with a
 * random secret of its own, so its tokens resume only its own sessions). A resume token opens one
 * session and nothing else: it is never an access token, nor an access token one of these.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResumeToken {
  readonly token: string
  readonly sessionId: string
  /** Seconds since the epoch. */
  readonly expiresAt: number
}

/** Why a resume token is refused; `unknown session` is the caller's verdict (a token that verifies
 * for a session no one holds).
 *
 * @since 0.1.0
 * @category models
 */
export type ResumeRefusal = "malformed" | "bad signature" | "expired" | "unknown session"

/**
 * A resume token for `sessionId`, good for at least `ttlSeconds` (its expiry is rounded up to a second).
 *
 * @since 0.1.0
 * @category constructors
 */
export const mintResume = (secret: Redacted.Redacted<string>, sessionId: string, ttlSeconds: number, nowMs: number): ResumeToken => {
  const expiresAt = Math.max(0, Math.ceil(nowMs / 1000 + ttlSeconds))
  const payload = `resume.${sessionId}.${expiresAt}`
  return { token: `${payload}.${sign(secret, payload)}`, sessionId, expiresAt }
}

/** Session ids are the core's (`[A-Za-z0-9_-]`); nothing else is read as one. */
const resumeShape = /^resume\.([A-Za-z0-9_-]{1,128})\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/

/**
 * The session a resume token opens, or why it opens none (the signature is checked before the expiry).
 *
 * @since 0.1.0
 * @category utils
 */
export const verifyResume = (
  secret: Redacted.Redacted<string>,
  token: string,
  nowMs: number
): { readonly _tag: "ok"; readonly sessionId: string } | { readonly _tag: "refused"; readonly reason: Exclude<ResumeRefusal, "unknown session"> } => {
  const parts = resumeShape.exec(token)
  if (parts === null) return { _tag: "refused", reason: "malformed" }
  const [, sessionId, expiry, signature] = parts as unknown as [string, string, string, string]
  if (!timingSafeEqual(Buffer.from(signature), Buffer.from(sign(secret, `resume.${sessionId}.${expiry}`)))) {
    return { _tag: "refused", reason: "bad signature" }
  }
  return Number(expiry) * 1000 < nowMs ? { _tag: "refused", reason: "expired" } : { _tag: "ok", sessionId }
}
