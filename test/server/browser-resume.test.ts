/**
 * Issue 34 in Chromium: the service cuts the page's socket mid-reply; the page shows
 * "reconnecting…", resumes the same session by itself, completes the reply that was cut (merged
 * by item id, nothing shown twice) and the next turn is answered by the agent holding the floor.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, Handoff, Tool } from "../../src/index.ts"
import { openPage } from "./browserPage.ts"

const weather = Agent.make({
  name: "weather",
  instructions: "You answer weather questions.",
  onEnter: Agent.reply({ instructions: "greet" }).pipe(Effect.asVoid)
})
const front = Agent.make({
  name: "front",
  instructions: "You are the front desk.",
  tools: [Tool.make("transfer_to_weather", { description: "to weather", handler: () => Effect.succeed(Handoff.to(weather)) })]
})
const PARTS = ["Weather desk here. ", "Sunny all week, ", "with a light breeze ", "on Thursday."]
const GREETING = PARTS.join("")
const models = ScriptedModel.layer([
  { when: { user: "weather" }, reply: { toolCalls: [{ name: "transfer_to_weather" }] } },
  { when: { instructions: "greet" }, reply: { text: PARTS, chunkDelay: "300 millis" } },
  { when: { user: "hello", agent: "weather" }, reply: { text: "Weather again: still sunny." } }
])

describe("the playground keeps its call across a dropped socket (issue 34)", () => {
  it.live("the server drops the socket mid-reply: the page shows reconnecting…, resumes by itself, keeps its transcript, and the next turn is answered", () =>
    Effect.gen(function*() {
      const { server, until, evaluate, shot, type, pageErrors } = yield* openPage({ agent: front, models })
      yield* until(`document.getElementById("status").textContent.startsWith("connected")`)
      // every status the page shows from here on
      yield* evaluate(`(() => { const s = document.getElementById("status"); window.statuses = [];
        new MutationObserver(() => window.statuses.push(s.textContent)).observe(s, { childList: true, characterData: true, subtree: true }) })()`)
      const sessionId = yield* evaluate<string>(`window.baton.sessionId`)
      yield* type("what's the weather?")
      yield* until(`window.baton.all.some((l) => l.agent === "weather" && l.text.length > 0)`, 15_000)
      const call = server.state.resumer.find(sessionId)
      assert.isDefined(call)
      yield* call!.dropClient
      yield* until(`window.baton.resumes === 1 && document.getElementById("status").textContent.includes("resumed")`, 15_000)
      const statuses = yield* evaluate<Array<string>>(`window.statuses`)
      assert.include(statuses, "reconnecting…")
      assert.strictEqual(yield* evaluate<string>(`window.baton.sessionId`), sessionId)
      yield* until(`document.getElementById("transcript").textContent.includes(${JSON.stringify(GREETING)})`, 15_000).pipe(
        Effect.tapCause(() => Effect.flatMap(evaluate<string>(`document.getElementById("transcript").innerHTML + " EVENTS " + document.getElementById("events").textContent`), (t) => Effect.logError(t)))
      )

      type Line = { cls: string; text: string }
      const transcript = () =>
        evaluate<Array<Line>>(`[...document.getElementById("transcript").children].map((d) => ({ cls: d.className, text: d.textContent }))`)
      const afterResume = yield* transcript()
      assert.deepStrictEqual(afterResume.filter((l) => l.text.includes("what's the weather?")).length, 1, JSON.stringify(afterResume))
      assert.deepStrictEqual(afterResume.filter((l) => l.text.includes("front → weather")).length, 1, JSON.stringify(afterResume))
      assert.deepStrictEqual(afterResume.filter((l) => l.text.includes("Weather desk here.")).map((l) => l.text), [`weather:${GREETING}`])

      yield* type("hello")
      yield* until(`document.getElementById("transcript").textContent.includes("Weather again: still sunny.")`, 15_000)
      const final = yield* transcript()
      assert.deepStrictEqual(final.slice(afterResume.length).map((l) => l.text), ["you:hello", "weather:Weather again: still sunny."])
      yield* shot("resumed-after-drop")
      assert.strictEqual(server.state.registry.total(), 1, "one session all along")
      assert.deepStrictEqual(pageErrors, [])
    }).pipe(Effect.scoped), 60_000)
})
