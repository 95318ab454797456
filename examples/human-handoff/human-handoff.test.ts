/**
 * examples/human-handoff runs as a person runs it (`node examples/human-handoff/main.ts`): the
 * front desk on its demo model with the operator's desk; a caller on /ws, an operator on
 * /operator/ws who takes over, speaks to the caller and hands back to the weather desk with a note
 * (no lag refusal: a loaded test machine is not an overloaded service).
 */
import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { connect, wait } from "../../test/server/harness.ts"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** The example's process, until the scope ends; its URL once it serves. */
const serving = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ url: string; stop: () => void }>((resolve, reject) => {
      const child = spawn(process.execPath, ["examples/human-handoff/main.ts"], {
        cwd: ROOT,
        env: { ...process.env, PORT: "0", HOST: "127.0.0.1", OPENAI_API_KEY: "", OPENAI_BASE_URL: "", BATON_TOKEN: "", BATON_MAX_LAG_MS: "0" }
      })
      let out = ""
      const timer = setTimeout(() => reject(new Error(`the example never served: ${out}`)), 60_000)
      const read = (d: unknown) => {
        out += String(d)
        const url = /serving on (http:\/\/\S+)/.exec(out)?.[1]
        if (url) {
          clearTimeout(timer)
          resolve({ url, stop: () => child.kill("SIGKILL") })
        }
      }
      child.stdout.on("data", read)
      child.stderr.on("data", read)
    })
  ),
  (s) => Effect.sync(s.stop)
)

describe("examples/human-handoff", () => {
  it.live("serves the front desk with an operator's desk: take over, say, hand back with a note", () =>
    Effect.gen(function*() {
      const { url } = yield* serving
      const ws = url.replace("http://", "ws://")
      assert.strictEqual((yield* Effect.promise(() => fetch(`${url}/operator`))).status, 200)
      const caller = yield* connect(`${ws}/ws`)
      yield* wait(() => caller.waitFor((f) => f.type === "ready", "ready"))
      caller.sendJson({ type: "user_text", text: "hello" })
      yield* wait(() => caller.waitFor((f) => f.type === "conversation_item_added" && f.item.role === "assistant", "the greeter's answer", 30_000))
      const operator = yield* connect(`${ws}/operator/ws`)
      operator.sendJson({ type: "list" })
      const list = yield* wait(() => operator.waitFor((f) => f.type === "sessions" && f.sessions.length === 1, "the session listed"))
      assert.strictEqual(list.sessions[0].holder, "greeter")
      assert.deepStrictEqual(list.agents, ["greeter", "weather"])
      operator.sendJson({ type: "open", session: list.sessions[0].id })
      yield* wait(() => operator.waitFor((f) => f.type === "history", "history"))
      operator.sendJson({ type: "take_over" })
      yield* wait(() => caller.waitFor((f) => f.type === "agent_handoff" && f.to === "operator" && f.kind === "take_over", "the take-over"))
      operator.sendJson({ type: "say", text: "Hi, a person here." })
      yield* wait(() => caller.waitFor((f) => f.type === "agent_text" && f.agent === "operator" && f.delta === "Hi, a person here.", "the operator's words"))
      operator.sendJson({ type: "hand_back", agent: "weather", note: "They asked about Paris." })
      const back = yield* wait(() => caller.waitFor((f) => f.type === "agent_handoff" && f.kind === "hand_back", "the hand back"))
      assert.deepStrictEqual([back.from, back.to], ["operator", "weather"])
    }).pipe(Effect.scoped), 120_000)
})
