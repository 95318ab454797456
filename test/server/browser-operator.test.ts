/**
 * Take over and give back on `/ws`, in Chromium with two pages (issue 35): a caller on `/` and an
 * operator on `/operator`, each with its own token (an operator token is not a caller's, nor the
 * other way round). The operator sees the live session, opens it, whispers, takes the floor (the
 * agent says nothing more), types to the caller, and hands the floor back to an agent with a note
 * the agent answers with.
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync } from "node:fs"
import { Effect, Redacted } from "effect"
import type { Page } from "playwright-core"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as Token from "../../server/Token.ts"
import { Agent, Handoff, Tool } from "../../src/index.ts"
import { start } from "./harness.ts"
import { CHROMIUM, callerAndOperator } from "./operatorPages.ts"

const SECRET = "operator-test-secret"

const billing = Agent.make({ name: "billing", instructions: "You are billing." })
const front = Agent.make({
  name: "front",
  instructions: "You are the front desk.",
  tools: [Tool.make("transfer_to_billing", { description: "to billing", handler: () => Effect.succeed(Handoff.to(billing)) })]
})

const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { instructions: "Offer a refund" }, reply: { text: "Billing here: your refund is on its way." } },
  { when: { instructions: "late checkout" }, reply: { text: "By the way, late checkout is free." } },
  { when: { user: "hello" }, reply: { text: "Hello from the front desk." } },
  { when: { agent: "front" }, reply: { text: "The front desk again." } }
]

const text = (page: Page, id: string) => Effect.promise(() => page.evaluate(`document.getElementById(${JSON.stringify(id)}).textContent`) as Promise<string>)

describe("the operator's desk in Chromium", () => {
  it.live("take over and give back: the caller hears the operator, the agent answers the note", () =>
    Effect.gen(function*() {
      if (!existsSync(CHROMIUM)) return yield* Effect.die(new Error(`${CHROMIUM} is missing: run \`npm run setup\``))
      const server = yield* start(front, ScriptedModel.layer(rules), { secret: SECRET, maxLagMs: 0, agents: [front, billing] } as never)
      const secret = Redacted.make(SECRET)
      const callerToken = Token.mint(secret, 600, Date.now(), "ws").token
      const operatorToken = Token.mint(secret, 600, Date.now(), "operator").token
      // A caller's token does not open the desk.
      const refused = yield* Effect.promise(() => fetch(`${server.url}/operator?token=${callerToken}`))
      assert.strictEqual(refused.status, 401)
      // Nor does an operator's token open a caller's line.
      assert.strictEqual((yield* Effect.promise(() => fetch(`${server.url}/ws?token=${operatorToken}`))).status, 401)
      const { caller, operator, errors, callerUntil, operatorUntil, type } = yield* callerAndOperator

      yield* Effect.promise(() => caller.goto(`${server.url}/?token=${callerToken}`))
      yield* callerUntil(`document.getElementById("floor").textContent === "front"`)
      yield* type(caller, "text", "hello")
      yield* callerUntil(`document.getElementById("transcript").textContent.includes("Hello from the front desk.")`)

      // The operator sees the session: front holds the floor, and the last words.
      yield* Effect.promise(() => operator.goto(`${server.url}/operator?token=${operatorToken}`))
      yield* operatorUntil(`document.querySelector("#sessions li")?.textContent.includes("front")`)
      assert.include(yield* text(operator, "sessions"), "Hello from the front desk.")
      yield* Effect.promise(() => operator.click("#sessions li"))
      yield* operatorUntil(`document.getElementById("transcript").textContent.includes("Hello from the front desk.")`)

      // A whisper: the agent's next reply follows it; the caller never sees the whisper itself.
      yield* type(operator, "whisper", "Mention the late checkout.")
      yield* operatorUntil(`window.desk.results.some((r) => r.of === "whisper")`)
      yield* type(caller, "text", "anything else?")
      yield* callerUntil(`document.getElementById("transcript").textContent.includes("late checkout is free")`)
      assert.notInclude(yield* text(caller, "transcript"), "Mention the late checkout")

      // Take over: the floor is the operator's on both pages; the caller's words reach the operator.
      yield* Effect.promise(() => operator.click("#takeOver"))
      yield* operatorUntil(`document.getElementById("holder").textContent === "operator"`)
      yield* callerUntil(`document.getElementById("floor").textContent === "operator"`)
      yield* type(caller, "text", "I was charged twice")
      yield* operatorUntil(`document.getElementById("transcript").textContent.includes("I was charged twice")`)
      yield* type(operator, "say", "Sorry about that, I am looking into it.")
      yield* callerUntil(`document.getElementById("transcript").textContent.includes("Sorry about that, I am looking into it.")`)
      // No agent answered the caller while the operator held the floor.
      assert.notInclude(yield* text(caller, "transcript"), "The front desk again.")

      // Hand back to billing with a note: billing answers with it.
      yield* Effect.promise(() => operator.selectOption("#agent", "billing"))
      yield* type(operator, "note", "Offer a refund for the double charge.")
      yield* callerUntil(`document.getElementById("floor").textContent === "billing"`)
      yield* callerUntil(`document.getElementById("transcript").textContent.includes("your refund is on its way")`)
      yield* operatorUntil(`document.getElementById("transcript").textContent.includes("your refund is on its way")`)
      const timeline = yield* text(operator, "timeline")
      assert.include(timeline, "front → operator (take_over)")
      assert.include(timeline, "operator → billing (hand_back)")
      assert.deepStrictEqual(errors, [])
    }).pipe(Effect.scoped), 90_000)
})
