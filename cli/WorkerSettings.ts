/**
 * What `baton worker` needs before it loads anything LiveKit: the server's address and keys
 * (LIVEKIT_URL, LIVEKIT_API_KEY, LIVEKIT_API_SECRET) and the drain (BATON_DRAIN_S). Read first,
 * so that a missing setting is the one line a user sees, with or without the LiveKit packages.
 */
import { Config, Effect, type Redacted } from "effect"

export interface WorkerSettings {
  readonly url: string
  readonly apiKey: string
  readonly apiSecret: Redacted.Redacted<string>
  readonly drainSeconds: number
}

export const settings: Effect.Effect<WorkerSettings, { readonly _tag: "WorkerConfig"; readonly message: string }> = Effect.gen(function*() {
  const url = yield* Config.NonEmptyString("LIVEKIT_URL")
  const apiKey = yield* Config.NonEmptyString("LIVEKIT_API_KEY")
  const apiSecret = yield* Config.Redacted("LIVEKIT_API_SECRET")
  const drainSeconds = yield* Config.Int("BATON_DRAIN_S").pipe(Config.withDefault(30))
  return { url, apiKey, apiSecret, drainSeconds }
}).pipe(
  Effect.mapError(() => ({
    _tag: "WorkerConfig" as const,
    message: "set LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET (for a local server: livekit-server --dev, with devkey / secret)"
  }))
)

/** The optional peers a worker loads: `npm install` them all at once. */
export const peers = ["@livekit/rtc-node", "@livekit/protocol", "livekit-server-sdk"] as const
