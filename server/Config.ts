/**
 * The service's settings, read once at start from the environment (or given in code). Every
 * limit has a default a phone line can live with; the secret is `Redacted` and never printed.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Config, Effect, Option, Redacted } from "effect"
import type { TwilioApi } from "./TwilioCallControl.ts"

/**
 * The service's options: where it listens, the token, limits on sessions, frames, text and idle
 * time, pings, and the drain on shutdown.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServerOptions {
  /** 127.0.0.1 unless set: without a token the service must not face a network. */
  readonly host: string
  readonly port: number
  /** Sessions open at once; the next upgrade is refused with 503. */
  readonly maxSessions: number
  /** Largest WebSocket frame accepted (bytes); a larger one closes that connection (1009). */
  readonly maxFrameBytes: number
  /** Longest user text accepted in one `user_text` frame (characters). */
  readonly maxTextChars: number
  /** A connection that sends nothing for this long is closed (seconds; 0 = never). */
  readonly idleSeconds: number
  /** Every client is pinged this often, and cut when it has answered nothing within as long
   * again: a half-open connection (seconds; 0 = no pings). */
  readonly pingSeconds: number
  /** On SIGTERM, how long open sessions may finish before they are closed (seconds). */
  readonly drainSeconds: number
  /** Shared secret: when set, `/ws` and `/twilio` need a token signed with it. */
  readonly token: Option.Option<Redacted.Redacted<string>>
  /** Lifetime of the tokens `POST /token` mints (seconds). */
  readonly tokenTtlSeconds: number
  /** Browser origins allowed to open `/ws` (empty: any origin, or none sent). */
  readonly allowedOrigins: ReadonlyArray<string>
  /** Where each session's audio (both sides) is recorded as WAV files; none when unset. */
  readonly recordDir: Option.Option<string>
  /** Typed turns a connection may have waiting for the agents; one more gets an `error` frame. */
  readonly maxPendingTurns: number
  /** Typed turns a connection may send a second (and as many at once); more get an `error` frame. */
  readonly turnsPerSecond: number
  /** While the event loop is later than this (ms), new sessions are refused with 503 (0: never). */
  readonly maxLagMs: number
  /** How long a session whose client went away without closing waits for it to resume
   * (`/ws?resume=<token>`) before it is closed (seconds; 0: closed at once). */
  readonly resumeSeconds: number
  /** Where sessions are journaled (`BATON_STORE`: `memory`, `sqlite:<path>`, `postgres://...`).
   * A durable one lets the drain move /ws clients to another node instead of waiting for them.
   * `Redacted`: a PostgreSQL URL carries a password. */
  readonly store: Option.Option<Redacted.Redacted<string>>
  /** Where the phone bridge POSTs each call's resume token (JSON), for the app's TwiML; none when unset. */
  readonly twilioStatusUrl: Option.Option<string>
  /** Twilio's REST API for hanging up and DTMF (`TWILIO_ACCOUNT_SID`, `TWILIO_AUTH_TOKEN`,
   * `BATON_TWILIO_API_URL`, `BATON_TWILIO_STREAM_URL`); none when the account is unset. */
  readonly twilioApi?: Option.Option<TwilioApi>
  /** This service's public base URL (`BATON_PUBLIC_URL`), where Twilio posts a transfer's
   * callbacks; default: the origin of `BATON_TWILIO_STREAM_URL`. */
  readonly publicUrl?: Option.Option<string>
  /** The caller ID a warm transfer calls the person from (`BATON_TWILIO_FROM`, a number of the account). */
  readonly twilioFrom?: Option.Option<string>
}

/**
 * The options when the environment sets nothing: 127.0.0.1:8080, 1000 sessions, no token.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: ServerOptions = {
  host: "127.0.0.1",
  port: 8080,
  maxSessions: 1000,
  maxFrameBytes: 256 * 1024,
  maxTextChars: 4000,
  idleSeconds: 300,
  pingSeconds: 10,
  drainSeconds: 30,
  token: Option.none(),
  tokenTtlSeconds: 600,
  allowedOrigins: [],
  recordDir: Option.none(),
  maxPendingTurns: 8,
  turnsPerSecond: 4,
  maxLagMs: 100,
  resumeSeconds: 60,
  store: Option.none(),
  twilioStatusUrl: Option.none()
}

const int = (name: string, fallback: number) => Config.Int(name).pipe(Config.withDefault(fallback))

/** Twilio's API when both the account SID and its auth token are set. */
const twilioApiFromEnv = Effect.gen(function*() {
  const accountSid = yield* Config.option(Config.NonEmptyString("TWILIO_ACCOUNT_SID"))
  const authToken = yield* Config.option(Config.Redacted("TWILIO_AUTH_TOKEN"))
  if (Option.isNone(accountSid) || Option.isNone(authToken)) return Option.none<TwilioApi>()
  return Option.some<TwilioApi>({
    accountSid: accountSid.value,
    authToken: authToken.value,
    baseUrl: yield* Config.String("BATON_TWILIO_API_URL").pipe(Config.withDefault("https://api.twilio.com")),
    streamUrl: yield* Config.option(Config.NonEmptyString("BATON_TWILIO_STREAM_URL"))
  })
})

/**
 * The options from PORT, HOST, BATON_TOKEN, BATON_MAX_SESSIONS, BATON_DRAIN_S, ...
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromEnv: Effect.Effect<ServerOptions, Config.ConfigError> = Effect.gen(function*() {
  return {
    host: yield* Config.String("HOST").pipe(Config.withDefault(defaults.host)),
    port: yield* int("PORT", defaults.port),
    maxSessions: yield* int("BATON_MAX_SESSIONS", defaults.maxSessions),
    maxFrameBytes: yield* int("BATON_MAX_FRAME_BYTES", defaults.maxFrameBytes),
    maxTextChars: yield* int("BATON_MAX_TEXT", defaults.maxTextChars),
    idleSeconds: yield* int("BATON_IDLE_S", defaults.idleSeconds),
    pingSeconds: yield* int("BATON_PING_S", defaults.pingSeconds),
    drainSeconds: yield* int("BATON_DRAIN_S", defaults.drainSeconds),
    token: yield* Config.option(Config.Redacted("BATON_TOKEN")).pipe(
      Config.map(Option.filter((secret) => Redacted.value(secret).trim() !== ""))
    ),
    tokenTtlSeconds: yield* int("BATON_TOKEN_TTL_S", defaults.tokenTtlSeconds),
    allowedOrigins: yield* Config.String("BATON_ORIGINS").pipe(
      Config.map((list) => list.split(",").map((o) => o.trim()).filter((o) => o !== "")),
      Config.withDefault([] as ReadonlyArray<string>)
    ),
    recordDir: yield* Config.option(Config.NonEmptyString("BATON_RECORD_DIR")),
    maxPendingTurns: yield* int("BATON_MAX_PENDING_TURNS", defaults.maxPendingTurns),
    turnsPerSecond: yield* int("BATON_TURNS_PER_S", defaults.turnsPerSecond),
    maxLagMs: yield* int("BATON_MAX_LAG_MS", defaults.maxLagMs),
    resumeSeconds: yield* int("BATON_RESUME_S", defaults.resumeSeconds),
    store: yield* Config.option(Config.Redacted("BATON_STORE")).pipe(
      Config.map(Option.filter((url) => Redacted.value(url).trim() !== ""))
    ),
    twilioStatusUrl: yield* Config.option(Config.NonEmptyString("BATON_TWILIO_STATUS_URL")),
    twilioApi: yield* twilioApiFromEnv,
    publicUrl: yield* Config.option(Config.NonEmptyString("BATON_PUBLIC_URL")),
    twilioFrom: yield* Config.option(Config.NonEmptyString("BATON_TWILIO_FROM"))
  }
})

/** Whether sessions outlive this process (a store other than `memory`): the drain then moves
 * /ws clients to another node (a `reconnect` frame) instead of waiting for their calls to end.
 *
 * @since 0.1.0
 * @category utils
 */
export const storeIsDurable = (options: Pick<ServerOptions, "store">): boolean =>
  Option.isSome(options.store) && Redacted.value(options.store.value).trim() !== "memory"
