/**
 * examples/resume/main.ts as a person runs it: the server killed with SIGKILL, the second one
 * resumes the call, the weather agent answers the next turn, a forged token is refused; the
 * clone is left as it was (the SQLite file goes to a temp folder).
 */
import { execFileSync, spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "vitest"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))
const status = () => execFileSync("git", ["status", "--porcelain", "--untracked-files=all", "--", "examples/resume"], { cwd: ROOT, encoding: "utf8" })

describe("examples/resume", () => {
  it("survives the SIGKILL: resumed true, the weather agent holds the floor and answers, a forged token refused with 4401", () => {
    const before = status()
    const run = spawnSync(process.execPath, ["examples/resume/main.ts"], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 90_000,
      env: { ...process.env, OPENAI_API_KEY: "", OPENAI_BASE_URL: "" }
    })
    const out = run.stdout + run.stderr
    assert.strictEqual(run.status, 0, out)
    assert.match(out, /server 1 killed \(SIGKILL\)/)
    assert.match(out, /resumed: true, session (session_\S+), weather holds the floor/)
    assert.match(out, /you: And in Oslo\?\nweather: In Oslo it's/)
    assert.match(out, /refused 4401/)
    assert.strictEqual(status(), before)
  }, 120_000)
})
