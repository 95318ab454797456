/**
 * Issue 34, end to end: the real service (`node cli/main.ts serve`, the demo model) journals its
 * /ws sessions to a durable store, and a session outlives the process that held it. On one
 * SQLite file: the first process is killed with SIGKILL after a handoff, a second one starts, and
 * the client's token resumes the session there (`resumed: true`, the weather agent still holding
 * the floor, the earlier turns in `history`, the next turn answered by that agent). On one
 * PostgreSQL database, the same across a fleet of two processes running side by side. Tokens that
 * are not good for a session are refused with their close code and reason.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Redacted } from "effect"
import { afterAll, afterEach, assert, beforeAll, describe, it } from "vitest"
import { accessToken, type Client, connect, type Service, startService } from "../../examples/resume/service.ts"
import * as Token from "../../server/Token.ts"
import { type PostgresCluster, startPostgres } from "../setup/postgres.ts"

const SECRET = "crash-resume-shared-secret"

let folder: string
let postgres: PostgresCluster | undefined
const running: Array<Service> = []
beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), "baton-crash-"))
  postgres = await startPostgres({ fast: true })
}, 60_000)
afterEach(() => {
  for (const service of running.splice(0)) service.child.kill("SIGKILL")
})
afterAll(() => {
  postgres?.stop()
  rmSync(folder, { recursive: true, force: true })
})

const serve = async (store: string) => {
  const service = await startService({ store, token: SECRET })
  running.push(service)
  return service
}

const texts = (client: Client, agent: string) =>
  client.frames.filter((f) => f.type === "agent_text" && f.agent === agent).map((f) => f.delta).join("")

/** A new session on `service`: the caller asks for the weather and is handed to the weather agent, who answers. */
const talkUntilHandoff = async (service: Service) => {
  const client = await connect(`${service.ws}/ws?token=${await accessToken(service, SECRET)}`)
  const ready = await client.waitFor((f) => f.type === "ready", "ready")
  assert.strictEqual(ready.agent, "greeter")
  client.send({ type: "user_text", text: "What's the weather in Paris?" })
  await client.waitFor((f) => f.type === "agent_handoff" && f.to === "weather", "the handoff to weather")
  await client.waitFor((f) => f.type === "speech_finished" && f.agent === "weather", "weather's answer", 20_000)
  assert.match(texts(client, "weather"), /Paris/)
  return { client, ready }
}

/** Resumes with `token` on `service` and checks what the issue asks of a resumed session. */
const resumeAndTalk = async (service: Service, token: string, sessionId: string) => {
  const client = await connect(`${service.ws}/ws?resume=${encodeURIComponent(token)}`)
  const back = await client.waitFor((f) => f.type === "ready", "ready")
  assert.strictEqual(back.resumed, true)
  assert.strictEqual(back.sessionId, sessionId)
  assert.strictEqual(back.agent, "weather", "the agent that held the floor holds it again")
  const history = await client.waitFor((f) => f.type === "history", "history")
  const items = history.items as Array<any>
  const asked = items.findIndex((i) => i._tag === "Message" && i.role === "user" && i.text === "What's the weather in Paris?")
  const handoff = items.findIndex((i) => i._tag === "AgentHandoff" && i.to === "weather")
  const answered = items.findIndex((i) => i._tag === "Message" && i.role === "assistant" && i.agent === "weather" && /Paris/.test(i.text))
  assert.isAtLeast(asked, 0, JSON.stringify(items))
  assert.isAbove(handoff, asked)
  assert.isAbove(answered, handoff)
  assert.strictEqual(new Set(items.map((i) => i.id)).size, items.length, "every item once")
  client.send({ type: "user_text", text: "And in Oslo?" })
  await client.waitFor((f) => f.type === "speech_finished" && f.agent === "weather", "weather's next answer", 20_000)
  assert.match(texts(client, "weather"), /Oslo/, "the next turn is answered by the weather agent")
  assert.strictEqual(texts(client, "greeter"), "", "the greeter says nothing: no new session started")
  return client
}

const refusal = async (url: string) => {
  const client = await connect(url)
  const closed = await client.closed
  assert.deepStrictEqual(client.frames, [], "a refused resume is told nothing but its close")
  return closed
}

describe("a session outlives its process (BATON_STORE, issue 34)", () => {
  it("SQLite: killed with SIGKILL after a handoff, a second process on the same file resumes the session with the client's token", async () => {
    const store = `sqlite:${join(folder, "crash.db")}`
    const first = await serve(store)
    const { ready } = await talkUntilHandoff(first)
    await first.crash()
    const second = await serve(store)
    await resumeAndTalk(second, ready.resumeToken, ready.sessionId)
  }, 90_000)

  it("PostgreSQL: a fleet of two processes on one database; the node holding the call is killed and the other resumes it", async () => {
    assert.isDefined(postgres, "the private PostgreSQL cluster")
    const store = postgres!.url
    const [a, b] = await Promise.all([serve(store), serve(store)])
    const { ready } = await talkUntilHandoff(a)
    // a new session on b meanwhile: the two nodes never give the same session id
    const other = await connect(`${b.ws}/ws?token=${await accessToken(b, SECRET)}`)
    const otherReady = await other.waitFor((f) => f.type === "ready", "ready on b")
    assert.notStrictEqual(otherReady.sessionId, ready.sessionId)
    await a.crash()
    await resumeAndTalk(b, ready.resumeToken, ready.sessionId)
  }, 90_000)

  it("PostgreSQL: a deploy drains one node (SIGTERM): its client is told to reconnect and resumes on the other node", async () => {
    assert.isDefined(postgres, "the private PostgreSQL cluster")
    const [a, b] = await Promise.all([serve(postgres!.url), serve(postgres!.url)])
    const { client, ready } = await talkUntilHandoff(a)
    a.child.kill("SIGTERM")
    const moved = await client.waitFor((f) => f.type === "reconnect", "reconnect")
    assert.deepStrictEqual(await client.closed, { code: 1012, reason: "service restart" })
    assert.strictEqual(await a.exited, 0)
    assert.include(a.output(), "1 moved to another node")
    await resumeAndTalk(b, moved.resumeToken, ready.sessionId)
  }, 90_000)

  it("a wrong, expired, other session's or ended session's token is refused with its close code and reason, by another process of the fleet too", async () => {
    const store = `sqlite:${join(folder, "refusals.db")}`
    const first = await serve(store)
    const { client, ready } = await talkUntilHandoff(first)
    const second = await serve(store)
    const [, id, expiry] = ready.resumeToken.split(".")

    const malformed = await refusal(`${second.ws}/ws?resume=not-a-token`)
    assert.deepStrictEqual(malformed, { code: 4400, reason: "resume token malformed: start a new session" })

    const forged = await refusal(`${second.ws}/ws?resume=${ready.resumeToken.replace(id, "session_someoneelse")}`)
    assert.deepStrictEqual(forged, { code: 4401, reason: "resume token not signed by this service: start a new session" })

    const stranger = Token.mintResume(Redacted.make("another service's secret"), id, 60, Date.now())
    assert.strictEqual((await refusal(`${second.ws}/ws?resume=${stranger.token}`)).code, 4401)

    const expired = Token.mintResume(Redacted.make(SECRET), id, 1, Date.now() - 10_000)
    assert.notStrictEqual(expired.token.split(".")[2], expiry)
    assert.deepStrictEqual(await refusal(`${second.ws}/ws?resume=${expired.token}`), { code: 4401, reason: "resume token expired: start a new session" })

    // a well-signed token of a session no store holds
    const unknown = Token.mintResume(Redacted.make(SECRET), "session_neverstarted", 60, Date.now())
    assert.deepStrictEqual(await refusal(`${second.ws}/ws?resume=${unknown.token}`), { code: 4404, reason: "the session ended or is not here: start a new session" })

    // the client closes (1000): the session ended, and no process resumes it
    client.socket.close(1000)
    await client.closed
    let ended: { code: number; reason: string } | undefined
    for (let i = 0; i < 40 && ended?.code !== 4404; i++) {
      await new Promise((r) => setTimeout(r, 100))
      ended = await refusal(`${second.ws}/ws?resume=${ready.resumeToken}`)
    }
    assert.deepStrictEqual(ended, { code: 4404, reason: "the session ended or is not here: start a new session" })
    assert.strictEqual((await refusal(`${first.ws}/ws?resume=${ready.resumeToken}`)).code, 4404)
  }, 90_000)
})
