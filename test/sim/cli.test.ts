/** `npm run sim -- --help` prints the options and runs nothing; an unknown option is refused. */
import { spawnSync } from "node:child_process"
import { assert, describe, it } from "@effect/vitest"

const sim = (...args: Array<string>) => spawnSync(process.execPath, ["test/sim/cli.ts", ...args], { encoding: "utf8", timeout: 20_000 })

describe("npm run sim (command line)", () => {
  it("--help prints the options and runs no seed", () => {
    const r = sim("--help")
    assert.strictEqual(r.status, 0)
    assert.include(r.stdout, "--seeds N")
    assert.include(r.stdout, "--fault NAME")
    assert.notInclude(r.stdout + r.stderr, "seeds...")
    assert.notInclude(r.stdout, " run, ")
  })

  it("an unknown option is refused with the usage and exit code 2", () => {
    const r = sim("--seeds", "10", "--bogus")
    assert.strictEqual(r.status, 2)
    assert.match(r.stderr, /^sim: unknown option --bogus/)
    assert.notInclude(r.stdout, " run, ")
  })
})
