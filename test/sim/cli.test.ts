/** `baton sim --help` (`npm run sim -- --help`) prints the options and runs nothing; an unknown option is refused. */
import { spawnSync } from "node:child_process"
import { assert, describe, it } from "@effect/vitest"

const sim = (...args: Array<string>) =>
  spawnSync(process.execPath, ["cli/main.ts", "sim", ...args], { encoding: "utf8", timeout: 30_000 })

describe("baton sim (command line)", () => {
  it("--help prints the options and runs no seed", () => {
    const r = sim("--help")
    assert.strictEqual(r.status, 0)
    assert.include(r.stdout, "--seeds integer")
    assert.include(r.stdout, "--fault choice")
    assert.notInclude(r.stdout + r.stderr, "seeds...")
    assert.notInclude(r.stdout, " run, ")
  })

  it("an unknown option is refused with the usage and a failing exit code", () => {
    const r = sim("--seeds", "10", "--bogus")
    assert.notStrictEqual(r.status, 0)
    assert.include(r.stdout + r.stderr, "Unrecognized flag: --bogus in command baton sim")
    assert.notInclude(r.stdout, " run, ")
  })

  it("runs the seeds it is given and reports them", () => {
    const r = sim("--seeds", "20", "--from", "100")
    assert.strictEqual(r.status, 0, r.stderr)
    assert.match(r.stdout, /^seeds 100\.\.119: 20 run, 0 failed/m)
  })
})
