/**
 * The Node service: HTTP routes on effect's own server (`effect/http` + NodeHttpServer), one
 * `AgentSession` per WebSocket on `/ws`, the phone bridge on `/twilio`, health, Prometheus
 * metrics, tokens and the drain. `Server.layer(options)` serves until its Scope closes;
 * `Server.run` adds the signals (SIGTERM drains, then exits 0).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { randomBytes } from "node:crypto"
import { createServer } from "node:http"
import { isIPv4 } from "node:net"
import { hostname } from "node:os"
import { NodeHttpServer } from "@effect/platform-node"
import { Cause, Clock, Context, Data, Deferred, Duration, Effect, Exit, Layer, Option, Redacted, type Schema, Scope } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import type { CallControl } from "../services/CallControl.ts"
import { Resampler } from "../services/Resampler.ts"
import { SessionStore } from "../services/SessionStore.ts"
import * as SessionStoreConfig from "../services/SessionStoreConfig.ts"
import * as SincResampler from "../services/SincResampler.ts"
import type { Agent } from "../src/index.ts"
import type * as Transfer from "../src/Transfer.ts"
import * as Call from "./Call.ts"
import { type ServerOptions, storeIsDurable } from "./Config.ts"
import * as Connection from "./Connection.ts"
import type { DurableSessions } from "./Line.ts"
import * as Limits from "./Limits.ts"
import * as Operator from "./Operator.ts"
import * as OperatorTransfer from "./OperatorTransfer.ts"
import { pingedSockets } from "./Liveness.ts"
import * as ServiceMetrics from "./Metrics.ts"
import { contentSecurityPolicy, favicon, page } from "./Page.ts"
import * as Registry from "./Registry.ts"
import * as Resumer from "./Resumer.ts"
import * as Token from "./Token.ts"
import * as Transfers from "./Transfers.ts"
import * as Twilio from "./Twilio.ts"

/**
 * The service's options plus what it serves: the entry agent, per-session userdata, the realtime
 * model's input rate and how the page describes the model.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServeOptions extends ServerOptions {
  /** The agent each new session starts with; its tools may use the call's `CallControl`
   * (`CallTools`) and transfer it (`Transfer.cold`/`warm`: the call's `Transferer`, Transfers.ts). */
  readonly agent: Agent.Agent<CallControl | Transfer.Transferer>
  /** Per-session state (the agents' `userdata`), made for each session. */
  readonly userdata?: () => unknown
  /** The realtime model's input rate (24000 for OpenAI Realtime, 16000 for Gemini Live). */
  readonly realtimeInputRate?: number
  /** A line for the page saying which model answers. */
  readonly modelDescription?: string
  /** Phrases the model understands, listed on the page (the demo model's). */
  readonly modelPhrases?: ReadonlyArray<string>
  /** With a durable store: every agent and task a session may run, so another process can resume
   * it (agents are found again by name; default: the entry agent alone). */
  readonly agents?: ReadonlyArray<Agent.Agent<CallControl | Transfer.Transferer>>
  /** Where `/ws` calls are transferred; default: an operator on the desk (`/operator`). */
  readonly transferer?: Transfer.TransfererService
  /** With a durable store: the userdata's Schema (its JSON form is journaled). Needed when
   * `userdata` makes any. */
  readonly userdataSchema?: Schema.Codec<unknown, unknown>
}

/**
 * The registry of the running server, for tests and the drain.
 *
 * @since 0.1.0
 * @category services
 */
export class ServerState extends Context.Service<ServerState, {
  readonly registry: Registry.Registry
  /** The sessions clients can resume, and how a resume token finds one. */
  readonly resumer: Resumer.Resumer
  /** The operators online at the desk (`/operator`) and the transfers offered to them. */
  readonly operators: OperatorTransfer.OperatorLine
}>()("baton/server/ServerState") {}

const json = (body: unknown, status = 200) => HttpServerResponse.jsonUnsafe(body, { status })

const refuse = (status: number, reason: ServiceMetrics.RefusalReason, message: string) =>
  ServiceMetrics.refuse(reason).pipe(Effect.as(HttpServerResponse.text(message, { status })))

/**
 * Why a request may not open a session, or undefined when it may. A resume (`?resume=`) needs no
 * access token: its resume token is the service's own credential for that one session.
 */
const checkAccess = (options: ServerOptions, request: HttpServerRequest.HttpServerRequest, route: Token.Route, nowMs: number, resuming: boolean) => {
  const origin = request.headers["origin"]
  if (options.allowedOrigins.length > 0 && origin !== undefined && !options.allowedOrigins.includes(origin)) {
    return { status: 403, reason: "origin" as const, message: `origin ${origin} is not allowed` }
  }
  if (Option.isNone(options.token) || resuming) return undefined
  const url = new URL(request.url, "http://local")
  const bearer = request.headers["authorization"]?.match(/^Bearer\s+(.+)$/i)?.[1]
  const given = url.searchParams.get("token") ?? bearer
  if (given === undefined || given === null) return { status: 401, reason: "unauthorized" as const, message: "a token is required (?token= or Authorization: Bearer)" }
  const verdict = Token.verify(options.token.value, given, route, nowMs)
  return verdict === "ok" ? undefined : { status: 401, reason: "unauthorized" as const, message: `token ${verdict}` }
}

/**
 * A session not live here, resumed from the store as a call of this process: it lives in the
 * server's Scope until it ends (like a new session, it waits for its client after a cut), and
 * holds a slot of `BATON_MAX_SESSIONS` as a new call does; with none free it is refused.
 */
const RESTORE_TIMEOUT = "10 seconds"

const restoreFromStore = (ctx: Connection.ConnectionContext, resumer: Resumer.Resumer, serverScope: Scope.Scope): Resumer.Restore => (id, transport) =>
  Effect.gen(function*() {
    const admission = ctx.registry.admit()
    if (admission !== "ok") {
      yield* ServiceMetrics.refuse(admission)
      return Resumer.unadmitted(admission, ctx.options.maxSessions)
    }
    const scope = yield* Scope.fork(serverScope)
    yield* Scope.addFinalizer(scope, Effect.sync(() => ctx.registry.release()))
    const restored = yield* Call.restore(ctx, ctx.resumeSecret, id, transport).pipe(
      Scope.provide(scope),
      // A resume that does not come back is refused (and what it started is closed), not waited on.
      Effect.timeoutOrElse({ duration: RESTORE_TIMEOUT, orElse: () => Effect.die(new Error(`resuming ${id} took over ${RESTORE_TIMEOUT}`)) }),
      Effect.exit
    )
    if (Exit.isFailure(restored)) {
      yield* Scope.close(scope, Exit.void)
      const error = Cause.findErrorOption(restored.cause)
      if (Option.isNone(error)) {
        yield* Effect.logWarning(`resume of ${id} from the store failed: ${Cause.pretty(restored.cause).split("\n")[0]}`)
        return Resumer.refusal("store failed")
      }
      yield* Effect.logInfo(`resume of ${id} from the store refused: ${error.value._tag}: ${error.value.message}`)
      return Resumer.refusal(error.value._tag === "StoreError" ? "store failed" : "unknown session")
    }
    const call = restored.value
    yield* resumer.add(call)
    yield* ServiceMetrics.sessionOpened
    yield* Deferred.await(call.ended).pipe(
      Effect.andThen(resumer.remove(call)),
      Effect.ensuring(Effect.andThen(Scope.close(scope, Exit.void), ServiceMetrics.sessionClosed)),
      Effect.forkIn(scope)
    )
    return { _tag: "Found", call } as const
  })

const routes = (
  options: ServeOptions,
  registry: Registry.Registry,
  resumer: Resumer.Resumer,
  resumeSecret: Redacted.Redacted<string>,
  durable: DurableSessions | undefined,
  serverScope: Scope.Scope,
  operators: OperatorTransfer.OperatorLine
) =>
  HttpRouter.use(Effect.fn(function*(router) {
    const resampler = yield* Resampler
    const lag = yield* ServiceMetrics.lagMonitor
    const lagMs = yield* Limits.lagWatch()
    // With a durable store, Twilio's transfer callbacks are answered on whichever node they reach.
    const transfers = Transfers.make(options, operators, options.transferer, durable && { store: durable.store, owner: durable.owner, secret: resumeSecret })
    const ctx: Connection.ConnectionContext = {
      agent: options.agent,
      userdata: options.userdata ?? (() => undefined),
      options,
      registry,
      resampler,
      realtimeInputRate: options.realtimeInputRate ?? 24_000,
      resumer,
      resumeSecret,
      durable,
      transfers
    }
    if (durable) resumer.restoreWith(restoreFromStore(ctx, resumer, serverScope))
    const upgradeTo = (route: Token.Route, serveSocket: typeof Connection.serve) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const resumeToken = route === "ws" ? new URL(request.url, "http://local").searchParams.get("resume") : null
        const now = yield* Clock.currentTimeMillis
        const denied = checkAccess(options, request, route, now, resumeToken !== null)
        if (denied) return yield* refuse(denied.status, denied.reason, denied.message)
        // A resume of a call live here takes no slot: the call holds one until it ends. One that
        // restores its session from the store takes one, and is refused at the limit as a new call is.
        if (resumeToken !== null) {
          if (registry.draining()) return yield* refuse(503, "draining", Limits.drainingReason)
          if (registry.open() >= options.maxSessions && resumer.wouldRestore(resumeToken, now)) {
            return yield* refuse(503, "full", Limits.sessionLimitReason(options.maxSessions))
          }
          return yield* Effect.flatMap(request.upgrade, (socket) => Connection.resume(resumeToken)(socket, ctx)).pipe(Effect.as(HttpServerResponse.empty()))
        }
        const overloaded = Limits.lagRefusal(lagMs(), options.maxLagMs)
        if (overloaded) return yield* refuse(503, "overloaded", overloaded)
        // A phone stream names its call (a new one, or one it reconnects) only in its `start`
        // message: Twilio.ts takes the call's slot there, or closes the stream at the limit.
        if (route === "twilio") {
          if (registry.draining()) return yield* refuse(503, "draining", Limits.drainingReason)
          return yield* Effect.flatMap(request.upgrade, (socket) => serveSocket(socket, ctx)).pipe(Effect.as(HttpServerResponse.empty()))
        }
        return yield* Registry.session(registry, {
          refused: (why) =>
            why === "full"
              ? refuse(503, "full", Limits.sessionLimitReason(options.maxSessions))
              : refuse(503, "draining", Limits.drainingReason),
          upgrade: request.upgrade,
          serve: (socket) => serveSocket(socket, ctx).pipe(Effect.as(HttpServerResponse.empty()))
        })
      })

    const html = page({ model: options.modelDescription ?? "", phrases: options.modelPhrases })
    const csp = contentSecurityPolicy(html)
    yield* router.add("GET", "/", Effect.sync(() => HttpServerResponse.html(html).pipe(HttpServerResponse.setHeader("content-security-policy", csp))))
    yield* router.add("GET", "/favicon.ico", Effect.sync(() =>
      HttpServerResponse.text(favicon, { contentType: "image/svg+xml" }).pipe(HttpServerResponse.setHeader("cache-control", "public, max-age=86400"))))
    yield* router.add("GET", "/health", Effect.sync(() =>
      json({ status: registry.draining() ? "draining" : "ok", sessions: registry.open(), total: registry.total(), draining: registry.draining(), lagMs: Math.round(lagMs()) },
        registry.draining() ? 503 : 200)))
    yield* router.add("GET", "/metrics", Effect.gen(function*() {
      yield* ServiceMetrics.sample(lag)
      return HttpServerResponse.text(yield* PrometheusMetrics.format(), { contentType: "text/plain; version=0.0.4" })
    }))
    yield* router.add("POST", "/token", Effect.gen(function*() {
      if (Option.isNone(options.token)) return json({ error: "no BATON_TOKEN is set: the service takes no tokens" }, 404)
      const request = yield* HttpServerRequest.HttpServerRequest
      const bearer = request.headers["authorization"]?.match(/^Bearer\s+(.+)$/i)?.[1]
      if (bearer === undefined || !Token.isSecret(options.token.value, bearer)) {
        return yield* refuse(401, "unauthorized", "POST /token needs Authorization: Bearer <BATON_TOKEN>")
      }
      const route = new URL(request.url, "http://local").searchParams.get("route") ?? "ws"
      if (!Token.isRoute(route)) return json({ error: `no route "${route}" takes tokens (expected ${Token.routes.join(" or ")})` }, 400)
      return json(Token.mint(options.token.value, options.tokenTtlSeconds, yield* Clock.currentTimeMillis, route))
    }))
    yield* router.add("GET", "/ws", upgradeTo("ws", Connection.serve))
    // The operator's desk: its own token (route "operator"), no slot of its own.
    const desk: Operator.Desk = { resumer, agents: options.agents ?? [options.agent], line: operators, resampler }
    const operatorHtml = Operator.page()
    const operatorCsp = contentSecurityPolicy(operatorHtml)
    const operatorAccess = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      return { request, denied: checkAccess(options, request, "operator", yield* Clock.currentTimeMillis, false) }
    })
    yield* router.add("GET", "/operator", Effect.gen(function*() {
      const { denied } = yield* operatorAccess
      if (denied) return yield* refuse(denied.status, denied.reason, denied.message)
      return HttpServerResponse.html(operatorHtml).pipe(HttpServerResponse.setHeader("content-security-policy", operatorCsp))
    }))
    yield* router.add("GET", "/operator/ws", Effect.gen(function*() {
      const { denied, request } = yield* operatorAccess
      if (denied) return yield* refuse(denied.status, denied.reason, denied.message)
      // The operator's name (offers for them reach them): ?name=, else "operator".
      const name = Operator.operatorName(new URL(request.url, "http://local").searchParams.get("name"))
      if (typeof name !== "string") return json({ error: name.error }, 400)
      return yield* Effect.flatMap(request.upgrade, (socket) => Operator.serve(socket, desk, name)).pipe(Effect.as(HttpServerResponse.empty()))
    }))
    yield* router.add("GET", "/twilio", upgradeTo("twilio", Twilio.serve))
    // Twilio's transfer callbacks, signed with the auth token (403 otherwise).
    yield* router.add("POST", "/twilio/transfer/:id/:kind", Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const signature = request.headers["x-twilio-signature"]
      const answer = yield* Transfers.twilioCallback(transfers, {
        path: request.url,
        signature: typeof signature === "string" ? signature : undefined,
        body: yield* request.text.pipe(Effect.orElseSucceed(() => ""))
      })
      return HttpServerResponse.text(answer.body, { status: answer.status, contentType: answer.status === 200 ? "text/xml" : "text/plain" })
    }))
  }))

/**
 * Whether `host` is this machine only: `localhost`, `::1` or any of 127.0.0.0/8 (also as `::ffff:127.x.y.z`).
 *
 * @since 0.1.0
 * @category utils
 */
export const isLoopback = (host: string): boolean => {
  const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase()
  if (bare === "localhost" || bare === "::1") return true
  const v4 = bare.replace(/^::ffff:/, "")
  return isIPv4(v4) && v4.startsWith("127.")
}

/**
 * Without a shared secret the service must not face a network: a non-loopback HOST is refused.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnsafeHost extends Data.TaggedError("UnsafeHost")<{ readonly message: string }> {}

/**
 * Serves on `options.host:options.port` until the Layer's Scope closes.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: ServeOptions) =>
  Layer.unwrap(Effect.gen(function*() {
    if (Option.isNone(options.token) && !isLoopback(options.host)) {
      return yield* new UnsafeHost({
        message: `HOST=${options.host} without BATON_TOKEN would let anyone who reaches it talk to your agents: set BATON_TOKEN, or leave HOST at 127.0.0.1`
      })
    }
    const registry = yield* Registry.make(options.maxSessions)
    // Without BATON_TOKEN, resume tokens are signed with a secret of this process: they resume its sessions only.
    const resumeSecret = Option.getOrElse(options.token, () => Redacted.make(randomBytes(32).toString("base64url")))
    const resumer = Resumer.make(resumeSecret)
    const serverScope = yield* Effect.scope
    const durable = yield* durableSessions(options)
    const operators = OperatorTransfer.make()
    return HttpRouter.serve(routes(options, registry, resumer, resumeSecret, durable, serverScope, operators), { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provideMerge(Layer.succeed(ServerState, { registry, resumer, operators })),
      Layer.provideMerge(NodeHttpServer.layer(createServer, {
        port: options.port,
        host: options.host,
        websocket: {
          maxPayload: options.maxFrameBytes,
          ...(options.pingSeconds > 0
            ? { WebSocket: pingedSockets({ interval: Duration.seconds(options.pingSeconds), timeout: Duration.seconds(options.pingSeconds) }) }
            : {})
        }
      })),
      // in TypeScript: serving needs none of the optional peers (no @livekit/rtc-node)
      Layer.provide(SincResampler.layer)
    )
  }))

/**
 * The store `BATON_STORE` names, opened for the server's life, when it is a durable one (with
 * `memory` a session is resumable within this process only, as without a store, so nothing is
 * journaled). A fleet shares it (and `BATON_TOKEN`, which signs the resume tokens).
 */
const durableSessions = (options: ServeOptions) =>
  Effect.gen(function*() {
    if (!storeIsDurable(options) || Option.isNone(options.store)) return undefined
    const context = yield* Layer.build(SessionStoreConfig.fromUrl(Redacted.value(options.store.value)))
    return {
      store: Context.get(context, SessionStore),
      agents: options.agents ?? [options.agent],
      userdataSchema: options.userdataSchema,
      owner: `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`
    } satisfies DurableSessions
  })

/**
 * How the service introduces itself at start, with what to know about access.
 *
 * @since 0.1.0
 * @category utils
 */
export const banner = (url: string, options: ServerOptions): ReadonlyArray<string> => [
  `baton is serving on ${url}  (open it in a browser)`,
  Option.isSome(options.token)
    ? `  /ws needs a token: POST ${url}/token with Authorization: Bearer $BATON_TOKEN`
    : "  no BATON_TOKEN: listening on this machine only (set BATON_TOKEN to serve a network)"
]
