/**
 * Two pages in a real headless Chromium (Debian's, driven by playwright-core) for the operator's
 * desk tests: a caller's and an operator's, their errors and Content-Security-Policy reports
 * gathered, each polled from outside the page (the CSP forbids evaluating strings inside it).
 */
import { Effect } from "effect"
import { chromium, type Page } from "playwright-core"

export const CHROMIUM = "/usr/bin/chromium"

/** Resolves once `expression` is true on `page`, polled every 25 ms. */
export const poll = (page: Page) => (expression: string, timeout = 15_000) =>
  Effect.promise(async () => {
    for (const end = Date.now() + timeout; !(await page.evaluate(expression));) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${expression}`)
      await new Promise((r) => setTimeout(r, 25))
    }
  })

/** Chromium (closed with the Scope) with a caller's page and an operator's, neither opened yet. */
export const callerAndOperator = Effect.gen(function*() {
  const browser = yield* Effect.acquireRelease(
    Effect.promise(() => chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] })),
    (b) => Effect.promise(() => b.close())
  )
  const errors: Array<string> = []
  const caller = yield* Effect.promise(() => browser.newPage())
  const operator = yield* Effect.promise(() => browser.newPage())
  for (const page of [caller, operator]) {
    page.on("pageerror", (e) => errors.push(e.message))
    page.on("console", (m) => m.text().includes("Content Security Policy") && errors.push(m.text()))
  }
  /** Types `words` into the field `id` and presses Enter. */
  const type = (page: Page, id: string, words: string) =>
    Effect.promise(async () => {
      await page.fill(`#${id}`, words)
      await page.press(`#${id}`, "Enter")
    })
  return { caller, operator, errors, callerUntil: poll(caller), operatorUntil: poll(operator), type }
})
