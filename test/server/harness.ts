/**
 * Starts the service on 127.0.0.1 (a free port) with given agents and model layers, and speaks
 * to it as a client does: a real WebSocket (`ws`) that collects every frame it receives.
 */
import { createServer } from "node:net"
import { Effect, Layer, Option, Redacted, Scope } from "effect"
import { HttpServer } from "effect/http"
import WebSocket from "ws"
import { defaults, type ServerOptions } from "../../server/Config.ts"
import * as Server from "../../server/Server.ts"
import type { CallControl } from "../../services/CallControl.ts"
import type { Agent } from "../../src/index.ts"
import type * as Transfer from "../../src/Transfer.ts"

export interface Started {
  readonly url: string
  readonly ws: string
  readonly state: Server.ServerState["Service"]
}

export const start = <E, R>(
  agent: Agent.Agent<CallControl | Transfer.Transferer>,
  models: Layer.Layer<never, E, R> | Layer.Layer<any, E, R>,
  options: Partial<ServerOptions> & { readonly secret?: string; readonly realtimeInputRate?: number } = {}
): Effect.Effect<Started, E, R | Scope.Scope> =>
  Effect.gen(function*() {
    const { secret, ...rest } = options
    const context = yield* Layer.build(
      Server.layer({
        ...defaults,
        port: 0,
        // The lag refusal (503 while the event loop is late) is off unless a test asks for it
        // (limits.test.ts): on a loaded machine a file's own work or another's makes the loop
        // late by more than the default 100 ms, and a session the test opens would be refused.
        maxLagMs: 0,
        ...rest,
        ...(secret === undefined ? {} : { token: Option.some(Redacted.make(secret)) }),
        agent
      }).pipe(Layer.provide(models as Layer.Layer<never, E, R>), Layer.orDie)
    )
    return yield* Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const url = HttpServer.formatAddress(server.address)
      return { url, ws: url.replace("http://", "ws://"), state: yield* Server.ServerState }
    }).pipe(Effect.provideContext(context))
  })

/** A port free on 127.0.0.1 now, for a service that must know its own URL before it starts
 * (its `publicUrl`, Twilio's callbacks). */
export const freePort = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const probe = createServer()
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
)

export interface Client {
  readonly socket: WebSocket
  readonly frames: Array<any>
  readonly binary: Array<Buffer>
  readonly sendJson: (message: unknown) => void
  readonly closed: Promise<{ code: number; reason: string }>
  /** Resolves with the first frame (already received or to come) that matches. */
  readonly waitFor: (match: (frame: any) => boolean, what?: string, ms?: number) => Promise<any>
}

export const connect = (
  url: string,
  headers: Record<string, string> = {},
  /** `autoPong: false`: the client answers no ping (a half-open connection, seen from the server). */
  options: { readonly autoPong?: boolean } = {}
): Effect.Effect<Client, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () =>
        new Promise<Client>((resolve, reject) => {
          const socket = new WebSocket(url, { headers, autoPong: options.autoPong ?? true })
          const frames: Array<any> = []
          const binary: Array<Buffer> = []
          const waiters: Array<() => void> = []
          socket.on("message", (data, isBinary) => {
            if (isBinary) binary.push(data as Buffer)
            else frames.push(JSON.parse(String(data)))
            for (const w of [...waiters]) w()
          })
          const closed = new Promise<{ code: number; reason: string }>((r) => socket.on("close", (code, reason) => r({ code, reason: String(reason) })))
          const waitFor = (match: (frame: any) => boolean, what = "a frame", ms = 10_000) =>
            new Promise<any>((res, rej) => {
              const check = () => {
                const found = frames.find(match)
                if (found === undefined) return false
                res(found)
                return true
              }
              if (check()) return
              const waiter = () => {
                if (check()) waiters.splice(waiters.indexOf(waiter), 1)
              }
              waiters.push(waiter)
              setTimeout(() => rej(new Error(`timed out waiting for ${what}; got ${JSON.stringify(frames.map((f) => f.type))}`)), ms)
            })
          socket.once("open", () => resolve({ socket, frames, binary, sendJson: (m) => socket.send(JSON.stringify(m)), closed, waitFor }))
          socket.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)))
          socket.once("error", reject)
        }),
      catch: (e) => e as Error
    }),
    (client) => Effect.sync(() => client.socket.terminate())
  )

export const wait = <A>(promise: () => Promise<A>) => Effect.promise(promise)
