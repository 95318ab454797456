/**
 * baton as a user gets it: `npm pack` (which builds dist/), the tarball installed into an empty
 * project next to its peers only, a plain-JavaScript program run with plain `node` on the built
 * files (two agents, a handoff, the scripted model from /testing), a TypeScript file type-checked
 * against the shipped .d.ts, and the `baton` bin answering `--help` and running the demo console.
 * A broken export map, a missing file in `files`, or a .d.ts that does not resolve fails here.
 */
import { execFileSync, spawnSync } from "node:child_process"
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const HERE = fileURLToPath(new URL(".", import.meta.url))
const rootPackage = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  name: string
  devDependencies: Record<string, string>
}

/** The environment of a user's shell: none of this repository's npm settings or conditions. */
const userEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (key === "NODE_OPTIONS" || key.startsWith("npm_") || key === "INIT_CWD") continue
    env[key] = value
  }
  return { ...env, OPENAI_API_KEY: "", OPENAI_BASE_URL: "", NO_COLOR: "1" }
}

let project = ""
let tarball = ""

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), "baton-consumer-"))
  const packed = execFileSync("npm", ["pack", "--json", "--pack-destination", project], {
    cwd: ROOT,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"]
  })
  // npm prints the prepack build's output before the JSON
  tarball = join(project, (JSON.parse(packed.slice(packed.indexOf("["))) as Array<{ filename: string }>)[0]!.filename)
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))
  const peers = ["effect", "@effect/platform-node", "@types/node", "typescript"].map((name) => `${name}@${rootPackage.devDependencies[name]}`)
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball, ...peers], {
    cwd: project,
    env: userEnv(),
    stdio: ["ignore", "pipe", "pipe"]
  })
  copyFileSync(join(HERE, "consumer", "main.mjs"), join(project, "main.mjs"))
  copyFileSync(join(HERE, "consumer", "typed.ts"), join(project, "typed.ts"))
}, 240_000)

afterAll(() => {
  if (project !== "") rmSync(project, { recursive: true, force: true })
})

const node = (args: ReadonlyArray<string>, input?: string) =>
  spawnSync(process.execPath, args, { cwd: project, env: userEnv(), encoding: "utf8", timeout: 60_000, ...(input !== undefined ? { input } : {}) })

describe("the package, installed from its tarball", () => {
  it("ships the built files and no tests, bench or simulation", () => {
    const listing = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).split("\n")
    assert.include(listing, "package/dist/src/index.js")
    assert.include(listing, "package/dist/src/index.d.ts")
    assert.include(listing, "package/dist/cli/main.js")
    assert.isFalse(listing.some((f) => /^package\/(test|bench|src|layers)\//.test(f) || f.includes("/test/") || f.endsWith(".test.js")), listing.join("\n"))
  })

  it("runs a two-agent handoff on the scripted model with plain node", () => {
    const result = node(["main.mjs"])
    assert.strictEqual(result.status, 0, result.stderr)
    assert.deepStrictEqual(JSON.parse(result.stdout), {
      handoffs: ["greeter->weather"],
      said: ["weather: Sunny in Paris."]
    })
  })

  it("type-checks a consumer against the shipped .d.ts", () => {
    writeFileSync(join(project, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ["node"]
      },
      files: ["typed.ts"]
    }))
    const result = node([join(project, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"])
    assert.strictEqual(result.status, 0, result.stdout + result.stderr)
    // and a mistake is caught: the check is not vacuous
    writeFileSync(join(project, "typed.ts"), readFileSync(join(project, "typed.ts"), "utf8") + "\nexport const wrong: number = Agent.make({ name: 1 })\n")
    const broken = node([join(project, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"])
    assert.notStrictEqual(broken.status, 0)
    assert.match(broken.stdout, /typed\.ts\(\d+,\d+\): error TS/)
  })

  it("installs the baton command: --help lists the modes, and the demo console answers", () => {
    const bin = join(project, "node_modules", ".bin", "baton")
    const help = node([bin, "--help"])
    assert.strictEqual(help.status, 0, help.stderr)
    for (const mode of ["console", "serve", "worker", "timeline", "sim"]) assert.match(help.stdout, new RegExp(`^\\s+${mode}\\s`, "m"))
    const chat = node([bin, "console"], "What's the weather in Paris?\n")
    assert.strictEqual(chat.status, 0, chat.stderr)
    assert.include(chat.stdout, "── floor: greeter → weather")
    assert.include(chat.stdout, "[weather]")
    const sim = node([bin, "sim"])
    assert.strictEqual(sim.status, 2)
    assert.include(sim.stderr, "ships with the baton repository")
  })

  it("runs the README's agents module with baton console --agents, and refuses a module without an agent in one line", () => {
    // the module as the README shows it, so that the README stays true
    const readme = readFileSync(join(ROOT, "README.md"), "utf8")
    const block = readme.slice(readme.indexOf("here `agents.mjs`:")).match(/```js\n([\s\S]*?)```/)
    assert.isNotNull(block, "the README has the agents.mjs example")
    writeFileSync(join(project, "agents.mjs"), block![1]!)
    const bin = join(project, "node_modules", ".bin", "baton")
    const chat = node([bin, "console", "--agents", "./agents.mjs"], "What's the weather in Paris?\n")
    assert.strictEqual(chat.status, 0, chat.stdout + chat.stderr)
    assert.include(chat.stdout, "baton · agents.mjs")
    assert.include(chat.stdout, "── floor: greeter → weather")
    assert.include(chat.stdout, "[weather] It is sunny in Paris.")
    writeFileSync(join(project, "empty.mjs"), "export const nothing = 1\n")
    const refused = node([bin, "console", "--agents", "./empty.mjs"], "hi\n")
    assert.strictEqual(refused.status, 1)
    assert.strictEqual(refused.stderr, "baton: --agents ./empty.mjs: export the entry agent as `agent` (or as the default export), made with Agent.make\n")
  })
})
