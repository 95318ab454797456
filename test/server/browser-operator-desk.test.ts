/**
 * The operator's desk in Chromium (issue 35). Offers: a transfer to the operator rings on their
 * page (who, the session, the briefing, a countdown) with Accept (the operator then holds the
 * caller's floor, and the timeline picture draws their lane) and Decline (the agent tells the
 * caller). Listen-in and the operator's voice, with fake media: the caller's page
 * streams its microphone (a looped tone) on a realtime session; the operator's page, in the same
 * browser, opens the session and receives its audio, not silence, while the caller speaks; once
 * the operator has taken over and turned on "speak", the caller's page receives the operator's
 * microphone where the agent's audio would come (the agent is silent by then).
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, mkdirSync } from "node:fs"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import { Agent, AgentTask, Tool } from "../../src/index.ts"
import * as Transfer from "../../src/Transfer.ts"
import { join } from "node:path"
import { openPage, SHOTS } from "./browserPage.ts"
import { serveWithDesk } from "./operatorDesk.ts"
import { CHROMIUM, callerAndOperator, poll } from "./operatorPages.ts"

const front = Agent.make({
  name: "front",
  instructions: "You are the front desk.",
  tools: [Tool.make("transfer", {
    description: "Transfer the caller to a person",
    handler: () => AgentTask.run(Transfer.warm({ to: "ada", briefing: "Jane was charged twice for room 12.", ringTimeout: "60 seconds" })).pipe(Effect.map(Transfer.describe))
  })]
})
const model = ScriptedModel.layer([
  { when: { user: "transfer me" }, reply: { toolCalls: [{ name: "transfer" }] } },
  { when: { agent: "front" }, reply: (r) => ({ text: r.last.kind === "tool" ? `Front desk: ${r.last.outputs.map((o) => o.output).join(" ")}` : "Front desk here." }) }
])

/** Resolves once `expression` (a number) has not changed for `ms`. */
const settled = (page: Page, expression: string, ms: number) =>
  Effect.promise(async () => {
    let last = await page.evaluate(expression)
    for (const end = Date.now() + 15_000; Date.now() < end;) {
      await new Promise((r) => setTimeout(r, ms))
      const now = await page.evaluate(expression)
      if (now === last) return now as number
      last = now
    }
    throw new Error(`${expression} never settled`)
  })

describe("the operator's desk in Chromium: offers, listen-in and voice", () => {
  it.live("a transfer rings on the operator's page with the briefing and a countdown; Accept puts the operator on the floor (and in the picture), Decline sends the caller back to the agent", () =>
    Effect.gen(function*() {
      if (!existsSync(CHROMIUM)) return yield* Effect.die(new Error(`${CHROMIUM} is missing: run \`npm run setup\``))
      const server = yield* serveWithDesk(front, model)
      const { caller, operator, errors, callerUntil, operatorUntil, type } = yield* callerAndOperator
      yield* Effect.promise(() => operator.goto(`${server.url}/operator?name=ada`))
      yield* operatorUntil(`document.getElementById("status").textContent === "connected"`)
      assert.isTrue(server.state.operators.online.has("ada"))
      yield* Effect.promise(() => caller.goto(server.url))
      yield* callerUntil(`window.baton.sessionId !== null`)
      const sessionId = yield* Effect.promise(() => caller.evaluate(`window.baton.sessionId`) as Promise<string>)

      yield* type(caller, "text", "transfer me")
      yield* operatorUntil(`document.querySelector("#offers .offer") !== null`)
      const offer = yield* Effect.promise(() => operator.evaluate(`document.querySelector("#offers .offer").textContent`) as Promise<string>)
      assert.include(offer, "Incoming warm transfer for ada")
      assert.include(offer, `session ${sessionId}`)
      assert.include(offer, "Jane was charged twice for room 12.")
      assert.match(offer, /ringing · (5\d|60) s/)
      yield* Effect.promise(async () => {
        mkdirSync(SHOTS, { recursive: true })
        await operator.screenshot({ path: join(SHOTS, "operator-offer.png") })
      })
      yield* Effect.promise(() => operator.click("#offers .offer button.accept"))
      yield* operatorUntil(`document.getElementById("holder").textContent === "ada"`)
      yield* callerUntil(`document.getElementById("floor").textContent === "ada"`)
      assert.strictEqual(yield* Effect.promise(() => operator.evaluate(`document.getElementById("sessionId").textContent`) as Promise<string>), sessionId)
      assert.strictEqual(yield* Effect.promise(() => operator.evaluate(`document.querySelectorAll("#offers .offer").length`) as Promise<number>), 0)
      // The picture of the session draws ada's lane as a person's, with the take-over marked.
      yield* operatorUntil(`document.querySelector('#picture g.lane[data-lane="ada"][data-kind="human"]') !== null`)
      yield* operatorUntil(`document.querySelector('#picture g.marker.take_over[data-lane="ada"]') !== null`)
      yield* type(operator, "say", "Hi Jane, Ada here.")
      yield* operatorUntil(`document.querySelector('#picture g.bar.human[data-lane="ada"]') !== null`)
      yield* Effect.promise(() => operator.screenshot({ path: join(SHOTS, "operator-took-over.png") }))

      // Back to the front desk; a second transfer is declined: the agent tells the caller.
      yield* Effect.promise(() => operator.selectOption("#agent", "front"))
      yield* Effect.promise(() => operator.click("#handBack"))
      yield* callerUntil(`document.getElementById("floor").textContent === "front"`)
      yield* type(caller, "text", "transfer me")
      yield* operatorUntil(`document.querySelector("#offers .offer") !== null`)
      yield* Effect.promise(() => operator.click("#offers .offer button.decline"))
      yield* operatorUntil(`document.querySelectorAll("#offers .offer").length === 0`)
      yield* callerUntil(`document.getElementById("transcript").textContent.includes("declined the transfer (ada declined)")`)
      assert.strictEqual(yield* Effect.promise(() => caller.evaluate(`document.getElementById("floor").textContent`) as Promise<string>), "front")
      assert.deepStrictEqual(errors, [])
    }).pipe(Effect.scoped), 90_000)

  it.live("the operator hears the caller speak; after taking over, the caller's page receives the operator's microphone", () =>
    Effect.gen(function*() {
      const { page: caller, server, until, pageErrors } = yield* openPage({ transcribe: "hmm" })
      yield* until(`document.getElementById("status").textContent.includes("voice on")`)
      const sessionId = yield* Effect.promise(() => caller.evaluate(`window.baton.sessionId`) as Promise<string>)
      const operator = yield* Effect.promise(() => caller.context().browser()!.newPage())
      const errors: Array<string> = []
      operator.on("pageerror", (e) => errors.push(e.message))
      operator.on("console", (m) => m.text().includes("Content Security Policy") && errors.push(m.text()))
      const operatorUntil = poll(operator)
      yield* Effect.promise(() => operator.goto(`${server.url}/operator?name=ada`))
      yield* operatorUntil(`document.querySelector('#sessions li[data-session="${sessionId}"]') !== null`)
      yield* Effect.promise(() => operator.click(`#sessions li[data-session="${sessionId}"]`))
      yield* operatorUntil(`document.getElementById("audio").textContent.includes("listening in (realtime)")`)
      // Nothing said yet: what comes (if anything) is silence.
      assert.strictEqual(yield* Effect.promise(() => operator.evaluate(`window.desk.listen.loud`) as Promise<number>), 0)

      // The caller speaks (open mic): the operator's page gets sound, not silence.
      yield* Effect.promise(() => caller.check("#openMic"))
      yield* operatorUntil(`window.desk.listen.loud >= 10 && window.desk.listen.peak > 2000`)

      // The speak box is for whoever holds the floor: not yet.
      assert.isTrue(yield* Effect.promise(() => operator.isDisabled("#speak")))
      yield* Effect.promise(() => operator.click("#takeOver"))
      yield* operatorUntil(`document.getElementById("holder").textContent === "ada"`)
      yield* until(`document.getElementById("floor").textContent === "ada"`)
      yield* Effect.promise(() => caller.uncheck("#openMic"))
      // The agent is silent now: what the caller's page has received stops growing.
      const before = yield* settled(caller, `window.baton.played + window.baton.dropped`, 600)
      yield* Effect.promise(() => operator.check("#speak"))
      yield* operatorUntil(`window.desk.voiceFrames > 50`)
      // The operator's microphone (at the page's own rate) reaches the caller: over half a second of it.
      yield* until(`window.baton.played + window.baton.dropped - ${before} > window.baton.outRate / 2`)
      const rate = yield* Effect.promise(() => caller.evaluate(`window.baton.outRate`) as Promise<number>)
      const operatorRate = yield* Effect.promise(() => operator.evaluate(`window.desk.ctx.sampleRate`) as Promise<number>)
      assert.strictEqual(rate, operatorRate, "the caller's page plays it at the rate it was captured")
      assert.deepStrictEqual([...errors, ...pageErrors], [])
    }).pipe(Effect.scoped), 90_000)
})
