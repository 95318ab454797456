/**
 * Short-lived access tokens for `/ws`: `<expiry seconds>.<HMAC-SHA256 of it, base64url>`, signed
 * with the service's shared secret. A browser gets one from `POST /token` (which needs the secret
 * itself) and never holds the secret. Comparison is constant-time.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { Redacted } from "effect"

const sign = (secret: Redacted.Redacted<string>, payload: string) =>
  createHmac("sha256", Redacted.value(secret)).update(payload).digest("base64url")

export const mint = (secret: Redacted.Redacted<string>, ttlSeconds: number, nowMs: number): { token: string; expiresAt: number } => {
  const expiresAt = Math.floor(nowMs / 1000) + ttlSeconds
  const payload = String(expiresAt)
  return { token: `${payload}.${sign(secret, payload)}`, expiresAt }
}

export type Verdict = "ok" | "malformed" | "bad signature" | "expired"

export const verify = (secret: Redacted.Redacted<string>, token: string, nowMs: number): Verdict => {
  const dot = token.indexOf(".")
  if (dot <= 0) return "malformed"
  const payload = token.slice(0, dot)
  const expiresAt = Number(payload)
  if (!/^\d+$/.test(payload) || !Number.isSafeInteger(expiresAt)) return "malformed"
  const given = Buffer.from(token.slice(dot + 1), "base64url")
  const expected = Buffer.from(sign(secret, payload), "base64url")
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "bad signature"
  return expiresAt * 1000 < nowMs ? "expired" : "ok"
}

/** The shared secret itself also opens the door (for servers calling the service directly). */
export const isSecret = (secret: Redacted.Redacted<string>, candidate: string): boolean => {
  const a = Buffer.from(Redacted.value(secret))
  const b = Buffer.from(candidate)
  return a.length === b.length && timingSafeEqual(a, b)
}
