/**
 * A call that survives its server's crash, by hand: `baton serve` (the demo model) journals its
 * sessions to a SQLite file; a client talks and is handed to the weather agent; the server is
 * killed with SIGKILL; a second server starts on the same file; the client reconnects with its
 * resume token and carries on with the same agent.
 *
 *   npx node examples/resume/main.ts                       (a SQLite file in a temp folder)
 *   npx node examples/resume/main.ts postgres://user:pw@127.0.0.1:5432/db   (any BATON_STORE)
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { accessToken, type Client, connect, startService } from "./service.ts"

// A fleet shares BATON_TOKEN: it signs the resume tokens every node accepts.
const SECRET = "example-resume-shared-secret"
const folder = mkdtempSync(join(tmpdir(), "baton-resume-"))
const store = process.argv[2] ?? `sqlite:${join(folder, "sessions.db")}`

/** What the agents said since frame `from`, a line per speech. */
const said = (client: Client, from: number) => {
  const speeches = new Map<string, string>()
  for (const f of client.frames.slice(from)) {
    if (f.type === "agent_text") speeches.set(f.speechId, (speeches.get(f.speechId) ?? `${f.agent}: `) + f.delta)
  }
  return [...speeches.values()]
}

try {
  console.log(`store: ${store.startsWith("sqlite:") ? store : store.replace(/\/\/[^@]*@/, "//…@")}`)
  const first = await startService({ store, token: SECRET })
  console.log(`server 1 (pid ${first.child.pid}) on ${first.url}`)
  const client = await connect(`${first.ws}/ws?token=${await accessToken(first, SECRET)}`)
  const ready = await client.waitFor((f) => f.type === "ready")
  console.log(`session ${ready.sessionId}, ${ready.agent} holds the floor`)
  console.log("you: What's the weather in Paris?")
  client.send({ type: "user_text", text: "What's the weather in Paris?" })
  await client.waitFor((f) => f.type === "speech_finished" && f.agent === "weather", "the weather agent's answer", 20_000)
  for (const line of said(client, 0)) console.log(line)

  await first.crash()
  console.log(`server 1 killed (SIGKILL): no drain, nothing said to the client`)
  const second = await startService({ store, token: SECRET })
  console.log(`server 2 (pid ${second.child.pid}) on ${second.url}, the same store`)

  const t0 = performance.now()
  const back = await connect(`${second.ws}/ws?resume=${encodeURIComponent(ready.resumeToken)}`)
  const resumed = await back.waitFor((f) => f.type === "ready")
  console.log(`resumed: ${resumed.resumed}, session ${resumed.sessionId}, ${resumed.agent} holds the floor (${(performance.now() - t0).toFixed(0)} ms)`)
  const history = await back.waitFor((f) => f.type === "history")
  console.log(`history: ${history.items.length} items, the earlier turns among them`)
  console.log("you: And in Oslo?")
  back.send({ type: "user_text", text: "And in Oslo?" })
  await back.waitFor((f) => f.type === "speech_finished" && f.agent === "weather", "the weather agent's next answer", 20_000)
  for (const line of said(back, 0)) console.log(line)

  const bad = await connect(`${second.ws}/ws?resume=${ready.resumeToken.replace(ready.sessionId, "session_someoneelse")}`)
  const refused = await bad.closed
  console.log(`another session's id in the token: refused ${refused.code} "${refused.reason}"`)
  back.socket.close(1000)
  await back.closed
  second.child.kill("SIGTERM")
  await second.exited
} finally {
  rmSync(folder, { recursive: true, force: true })
}
