/**
 * baton as a user gets it: `npm pack` (which builds dist/), the tarball installed into an empty
 * project next to its peers only, a plain-JavaScript program run with plain `node` on the built
 * files (two agents, a handoff, the scripted model from /testing), a TypeScript file type-checked
 * against the shipped .d.ts, and the `baton` bin answering `--help`, running the demo console,
 * serving a `/ws` turn and refusing `worker` in one line, with none of the optional peers installed
 * (issue 33 item 7). A broken export map, a missing file in `files`, a .d.ts that does not resolve,
 * or an optional peer loaded where it is not needed fails here.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process"
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import WebSocket from "ws"

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

const node = (args: ReadonlyArray<string>, input?: string, env: NodeJS.ProcessEnv = {}) =>
  spawnSync(process.execPath, args, {
    cwd: project,
    env: { ...userEnv(), ...env },
    encoding: "utf8",
    timeout: 60_000,
    ...(input !== undefined ? { input } : {})
  })

const bin = () => join(project, "node_modules", ".bin", "baton")

/** The README's agents module, written into the project, so that the README stays true. */
const writeReadmeAgents = () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8")
  const block = readme.slice(readme.indexOf("here `agents.mjs`:")).match(/```js\n([\s\S]*?)```/)
  assert.isNotNull(block, "the README has the agents.mjs example")
  writeFileSync(join(project, "agents.mjs"), block![1]!)
}

/** `baton serve --agents ./agents.mjs` on a free port; resolves with its URL once it serves. */
const serveReadmeAgents = async () => {
  writeReadmeAgents()
  const child = spawn(process.execPath, [bin(), "serve", "--agents", "./agents.mjs"], {
    cwd: project,
    env: { ...userEnv(), PORT: "0", BATON_DRAIN_S: "1" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  child.stdout.on("data", (d) => (out += String(d)))
  child.stderr.on("data", (d) => (out += String(d)))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  for (let i = 0; i < 600 && !/voice: /i.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50))
  const url = out.match(/serving on (http:\/\/127\.0\.0\.1:\d+)/)?.[1]
  return { child, url, output: () => out, exited }
}

/** One `/ws` session: says `text`, collects the agents' words until `until` is among them. */
const turn = (url: string, text: string, until: string) =>
  new Promise<{ said: string; frames: Array<{ type: string }> }>((resolve, reject) => {
    const socket = new WebSocket(`${url.replace("http", "ws")}/ws`)
    const frames: Array<any> = []
    let said = ""
    const timer = setTimeout(() => (socket.close(), reject(new Error(`no answer: ${JSON.stringify(frames)}`))), 30_000)
    socket.on("error", reject)
    socket.on("message", (data, isBinary) => {
      if (isBinary) return
      const frame = JSON.parse(String(data))
      frames.push(frame)
      if (frame.type === "ready") socket.send(JSON.stringify({ type: "user_text", text }))
      if (frame.type === "agent_text") said += frame.delta
      if (said.includes(until)) {
        clearTimeout(timer)
        socket.close()
        resolve({ said, frames })
      }
    })
  })

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
    const help = node([bin(), "--help"])
    assert.strictEqual(help.status, 0, help.stderr)
    for (const mode of ["console", "serve", "worker", "timeline", "sim"]) assert.match(help.stdout, new RegExp(`^\\s+${mode}\\s`, "m"))
    const chat = node([bin(), "console"], "What's the weather in Paris?\n")
    assert.strictEqual(chat.status, 0, chat.stderr)
    assert.include(chat.stdout, "── floor: greeter → weather")
    assert.include(chat.stdout, "[weather]")
    const sim = node([bin(), "sim"])
    assert.strictEqual(sim.status, 2)
    assert.include(sim.stderr, "ships with the baton repository")
  })

  it("issue 37: npx baton sim --agents runs the README's \"Simulate your agents\" module on 50 seeds from the installed package", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8")
    const block = readme.slice(readme.indexOf("## Simulate your agents")).match(/```js\n([\s\S]*?)```/)
    assert.isNotNull(block, "the README has the sim example")
    writeFileSync(join(project, "sim-agents.mjs"), block![1]!)
    const env = { ...userEnv(), PATH: `${dirname(process.execPath)}:${process.env["PATH"] ?? ""}` }
    const sim = spawnSync("npx", ["--no-install", "baton", "sim", "--agents", "sim-agents.mjs", "--seeds", "50"], {
      cwd: project,
      env,
      encoding: "utf8",
      timeout: 120_000
    })
    assert.strictEqual(sim.status, 0, sim.stdout + sim.stderr)
    assert.include(sim.stdout, "50 seeds (0..49) on greeter, weather: all kept the rules")
  }, 150_000)

  it("runs the README's agents module with baton console --agents, and refuses a module without an agent in one line", () => {
    writeReadmeAgents()
    const chat = node([bin(), "console", "--agents", "./agents.mjs"], "What's the weather in Paris?\n")
    assert.strictEqual(chat.status, 0, chat.stdout + chat.stderr)
    assert.include(chat.stdout, "baton · agents.mjs")
    assert.include(chat.stdout, "── floor: greeter → weather")
    assert.include(chat.stdout, "[weather] It is sunny in Paris.")
    writeFileSync(join(project, "empty.mjs"), "export const nothing = 1\n")
    const refused = node([bin(), "console", "--agents", "./empty.mjs"], "hi\n")
    assert.strictEqual(refused.status, 1)
    assert.strictEqual(refused.stderr, "baton: --agents ./empty.mjs: export the entry agent as `agent` (or as the default export), made with Agent.make\n")
  })

  it("issue 33 item 7: with no optional peer installed, baton serve --agents answers a /ws turn", async () => {
    for (const peer of ["@livekit/rtc-node", "@livekit/protocol", "livekit-server-sdk", "koffi", "onnxruntime-node"]) {
      assert.isFalse(existsSync(join(project, "node_modules", peer)), `${peer} is installed in the consumer`)
    }
    const served = await serveReadmeAgents()
    try {
      assert.isDefined(served.url, served.output())
      const { said, frames } = await turn(served.url!, "What's the weather in Paris?", "It is sunny in Paris.")
      assert.include(said, "It is sunny in Paris.")
      assert.isTrue(frames.some((f) => f.type === "agent_handoff"), JSON.stringify(frames))
      served.child.kill("SIGTERM")
      assert.strictEqual(await served.exited, 0, served.output())
      assert.notMatch(served.output(), /Cannot find package|at .*\.js:\d+/)
    } finally {
      served.child.kill("SIGKILL")
    }
  }, 90_000)

  it("issue 33 item 7: baton worker without LiveKit settings prints one line and exits 1; with them, one line naming the npm install", () => {
    const unset = node([bin(), "worker"], undefined, { LIVEKIT_URL: "", LIVEKIT_API_KEY: "", LIVEKIT_API_SECRET: "" })
    assert.strictEqual(unset.status, 1, unset.stdout + unset.stderr)
    assert.strictEqual(
      unset.stderr,
      "baton: set LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET (for a local server: livekit-server --dev, with devkey / secret)\n"
    )
    const set = node([bin(), "worker"], undefined, { LIVEKIT_URL: "ws://127.0.0.1:9", LIVEKIT_API_KEY: "devkey", LIVEKIT_API_SECRET: "secret" })
    assert.strictEqual(set.status, 1, set.stdout + set.stderr)
    assert.match(
      set.stderr,
      /^baton: baton worker needs (?:@livekit\/[a-z-]+|livekit-server-sdk), which is not installed: npm install @livekit\/rtc-node @livekit\/protocol livekit-server-sdk\n$/
    )
  })
})
