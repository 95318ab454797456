/**
 * The main job as a user runs it (`npm start` = baton serve, cli/main.ts): on the demo model with no
 * key, a real client talks to the front desk; SIGTERM drains (the open session gets `close`) and
 * the process exits 0. Through npm too (issue 33 item 6): SIGTERM to the npm process reaches the
 * server, Ctrl-C (SIGINT to the whole process group, which npm forwards once more) is one request
 * to stop, and a second signal closes every session at once.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { createConnection } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { TestClock } from "effect/testing"
import * as Run from "../../server/Run.ts"
import { type Client, connect, wait } from "./harness.ts"

interface Served {
  readonly child: ChildProcess
  readonly url: string
  readonly output: () => string
  readonly exited: Promise<number | null>
}

/**
 * Starts `command` in its own process group (as a terminal does), waits for the banner; the
 * whole group is killed when the test ends, whatever happened.
 */
const serve = (command: string, args: ReadonlyArray<string>, drainSeconds: number) =>
  Effect.gen(function*() {
    const env = { ...process.env, PORT: "0", BATON_DRAIN_S: String(drainSeconds), OPENAI_API_KEY: "", OPENAI_BASE_URL: "" }
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"], detached: true })),
      (c) => Effect.sync(() => {
        try {
          process.kill(-c.pid!, "SIGKILL")
        } catch {
          // already gone
        }
      })
    )
    let out = ""
    child.stdout!.on("data", (d) => (out += String(d)))
    child.stderr!.on("data", (d) => (out += String(d)))
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)))
    const url = yield* wait(async () => {
      for (let i = 0; i < 400; i++) {
        const m = out.match(/serving on (http:\/\/127\.0\.0\.1:\d+)/)
        if (m && out.includes("Voice:")) return m[1]!
        await new Promise((r) => setTimeout(r, 50))
      }
      throw new Error(`no banner: ${out}`)
    })
    return { child, url, output: () => out, exited } satisfies Served
  })

const ready = (url: string) =>
  Effect.gen(function*() {
    const client = yield* connect(`${url.replace("http", "ws")}/ws`)
    yield* wait(() => client.waitFor((f) => f.type === "ready"))
    return client
  })

/** Whether anything still accepts connections on the URL's port. */
const listening = (url: string) =>
  wait(() =>
    new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: "127.0.0.1", port: Number(new URL(url).port) })
      socket.on("connect", () => (socket.destroy(), resolve(true)))
      socket.on("error", () => resolve(false))
    })
  )

const closeOf = (client: Client) => wait(() => client.waitFor((f) => f.type === "close", "close", 20_000))

const untilLogged = (served: Served, text: string) =>
  wait(async () => {
    for (let i = 0; i < 400 && !served.output().includes(text); i++) await new Promise((r) => setTimeout(r, 25))
    if (!served.output().includes(text)) throw new Error(`never logged "${text}": ${served.output()}`)
  })

describe("the stop signals (server/Run.ts)", () => {
  it.effect("a signal within sameSignalMs of the first is the same request; one after it asks to close now", () =>
    Effect.gen(function*() {
      let emit = () => {}
      let listening = false
      const source: Run.SignalSource = (listener) => {
        emit = listener
        listening = true
        return () => void (listening = false)
      }
      yield* Effect.scoped(Effect.gen(function*() {
        const urgent = yield* Run.secondSignal(source)
        assert.isTrue(listening)
        emit() // the terminal's SIGINT
        yield* TestClock.adjust(5)
        emit() // npm's forwarded copy
        assert.isFalse(yield* Deferred.isDone(urgent))
        yield* TestClock.adjust(Run.sameSignalMs - 6)
        emit()
        assert.isFalse(yield* Deferred.isDone(urgent))
        yield* TestClock.adjust(1)
        emit() // the user presses again
        assert.isTrue(yield* Deferred.isDone(urgent))
      }))
      assert.isFalse(listening, "the listener is removed when the Scope closes")
    }))
})

describe("baton serve (npm start)", () => {
  it.live("serves the front desk on the demo model; SIGTERM drains the open session and exits 0", () =>
    Effect.gen(function*() {
      const served = yield* serve(process.execPath, ["cli/main.ts", "serve"], 1)
      const { url, child } = served
      assert.include(served.output(), "listening on this machine only")
      const client = yield* ready(url)
      client.sendJson({ type: "user_text", text: "what's the weather in Paris?" })
      yield* wait(() => client.waitFor((f) => f.type === "agent_handoff", "a handoff to the weather agent"))
      const metrics = yield* wait(() => fetch(`${url}/metrics`).then((r) => r.text()))
      assert.match(metrics, /baton_handoffs_total\{[^}]*to="weather"[^}]*\} 1/) // the core's metrics, next to the service's
      assert.match(metrics, /baton_server_sessions_open 1/)
      child.kill("SIGTERM")
      const close = yield* closeOf(client)
      assert.match(close.reason, /shutting down/)
      assert.strictEqual(yield* wait(() => served.exited), 0)
      assert.include(served.output(), "drained: 0 finished, 1 closed")
    }).pipe(Effect.scoped), 30_000)

  it.live("issue 33 item 6: npm start, then SIGTERM to the npm process: the server drains, npm exits 0, nothing is left on the port", () =>
    Effect.gen(function*() {
      const served = yield* serve("npm", ["start"], 1)
      const client = yield* ready(served.url)
      served.child.kill("SIGTERM") // the npm process only, as a process manager does
      const close = yield* closeOf(client)
      assert.match(close.reason, /shutting down/)
      assert.strictEqual(yield* wait(() => served.exited), 0, served.output())
      assert.include(served.output(), "drained: 0 finished, 1 closed")
      assert.isFalse(yield* listening(served.url), "the server still listens after npm exited")
    }).pipe(Effect.scoped), 60_000)

  it.live("issue 33 item 6: Ctrl-C under npm start (SIGINT to the group, forwarded again by npm) is one request: the session may finish its drain", () =>
    Effect.gen(function*() {
      const served = yield* serve("npm", ["start"], 2)
      const client = yield* ready(served.url)
      process.kill(-served.child.pid!, "SIGINT")
      yield* closeOf(client)
      assert.strictEqual(yield* wait(() => served.exited), 0, served.output())
      assert.include(served.output(), "stopping: draining 1 session(s), up to 2 s")
      assert.notInclude(served.output(), "second signal")
      assert.isFalse(yield* listening(served.url))
    }).pipe(Effect.scoped), 60_000)

  it.live("issue 33 item 6: a second Ctrl-C during the drain closes every session at once (each gets close) and exits", () =>
    Effect.gen(function*() {
      const served = yield* serve("npm", ["start"], 600)
      const clients = [yield* ready(served.url), yield* ready(served.url)]
      process.kill(-served.child.pid!, "SIGINT")
      yield* untilLogged(served, "stopping: draining 2 session(s), up to 600 s")
      // the drain waits for the sessions: none is closed until the user insists
      yield* Effect.sleep("1200 millis") // longer than Run.sameSignalMs: a new signal, not npm's copy
      assert.isTrue(clients.every((c) => !c.frames.some((f) => f.type === "close")))
      process.kill(-served.child.pid!, "SIGINT")
      for (const client of clients) assert.match((yield* closeOf(client)).reason, /shutting down/)
      assert.strictEqual(yield* wait(() => served.exited), 0, served.output())
      assert.include(served.output(), "second signal: closing 2 session(s) now")
      assert.include(served.output(), "drained: 0 finished, 2 closed")
      assert.isFalse(yield* listening(served.url))
    }).pipe(Effect.scoped), 60_000)

  it("without BATON_TOKEN a non-loopback HOST is refused with one line and exit code 1", () => {
    const result = spawnSync(process.execPath, ["cli/main.ts", "serve"], {
      env: { ...process.env, HOST: "0.0.0.0", PORT: "0", BATON_TOKEN: "" },
      encoding: "utf8",
      timeout: 20_000
    })
    assert.strictEqual(result.status, 1, result.stdout + result.stderr)
    assert.match(result.stderr, /^baton: HOST=0\.0\.0\.0 without BATON_TOKEN .* set BATON_TOKEN, or leave HOST at 127\.0\.0\.1\n$/)
  })
})
