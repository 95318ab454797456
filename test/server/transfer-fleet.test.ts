/**
 * Issue 34 with issue 35: a transfer's outcome reaches it wherever it runs. A fleet of two nodes
 * (two services in this process, on 127.0.0.1) on one real PostgreSQL store; Twilio's callbacks
 * go to `BATON_PUBLIC_URL`, which is node A's, while the call was resumed on node B (its stream
 * dropped on A and came back to B with the call's resume token). The REST mock plays Twilio,
 * the test plays the Media Streams. Before the transfer's record in the store, node A answered
 * those callbacks 404 and node B's transfer waited out its ring timeout.
 */
import { createConnection, createServer, type Socket } from "node:net"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import type { ServerOptions } from "../../server/Config.ts"
import type { ServeOptions } from "../../server/Server.ts"
import * as Token from "../../server/Token.ts"
import * as TransferRecords from "../../server/TransferRecords.ts"
import * as TwilioTransfer from "../../server/TwilioTransfer.ts"
import { SessionStore } from "../../services/SessionStore.ts"
import * as SessionStoreConfig from "../../services/SessionStoreConfig.ts"
import { Agent, AgentTask, Tool } from "../../src/index.ts"
import * as Durable from "../../src/internal/Durable.ts"
import * as Transfer from "../../src/Transfer.ts"
import * as Mock from "../mocks/twilio-rest/transfers.ts"
import { type PostgresCluster, startPostgres } from "../setup/postgres.ts"
import { type Client, connect, freePort, start, wait } from "./harness.ts"
import * as TwilioStream from "./twilio-stream.ts"

const SECRET = "transfer-fleet-shared-secret"
const CALL_SID = "CA" + "f".repeat(32)
const CALL: TwilioStream.TwilioCall = { accountSid: Mock.ACCOUNT_SID, callSid: CALL_SID }
const BUSY = "+15550000004"
const ANSWERS = "+15550000001"
const RINGS = "+15550000009"

let postgres: PostgresCluster | undefined
beforeAll(async () => {
  postgres = await startPostgres({ fast: true })
}, 60_000)
afterAll(() => postgres?.stop())

const transferTool = Tool.make("transfer", {
  description: "Transfer the caller to a person",
  parameters: Schema.Struct({ to: Schema.String }),
  handler: (args) => AgentTask.run(Transfer.cold(args.to, { ringTimeout: "20 seconds" })).pipe(Effect.map(Transfer.describe))
})
const desk = Agent.make({ name: "desk", instructions: "Transfer when asked.", tools: [transferTool] })
/** What a resume finds the agents of a journal among, by name: the transfer task too (its
 * `onRestore` reads the outcome from the record, whatever number it dialed). */
const agents = [desk, Transfer.cold("", { ringTimeout: "20 seconds" })]

/** The tool outputs each node's model was given. */
const model = (outputs: Array<string>) =>
  ScriptedModel.layer([
    {
      when: (request) => {
        if (request.last.kind === "tool") outputs.push(request.last.outputs.map((o) => o.output).join("; "))
        return false
      },
      reply: {}
    },
    { when: { user: "DTMF: 1" }, reply: { toolCalls: [{ name: "transfer", arguments: { to: BUSY } }] } },
    { when: { user: "DTMF: 2" }, reply: { toolCalls: [{ name: "transfer", arguments: { to: ANSWERS } }] } },
    { when: { user: "DTMF: 3" }, reply: { toolCalls: [{ name: "transfer", arguments: { to: RINGS } }] } },
    { when: { toolOutput: /busy/, name: "transfer" }, reply: { text: "Sales is busy; I can help you myself." } },
    // After a restart the call's output is the task's result itself (the tool's code after the task died with its process).
    { when: { toolOutput: /NoAnswer/, name: "transfer" }, reply: { text: "Nobody picked up; I can help you myself." } },
    { when: { agent: "desk" }, reply: { text: "Press 1 or 2." } }
  ])

const until = (what: string, check: () => boolean, ms = 15_000) =>
  wait(async () => {
    for (let waited = 0; !check(); waited += 20) {
      if (waited > ms) throw new Error(`timed out waiting for ${what}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  })

/**
 * A TCP relay to PostgreSQL for one node: `cut` is that node's death as its store sees it (every
 * connection dropped, no new one taken), so nothing it still runs in this process reaches the store.
 */
const relay = (target: number) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ readonly port: number; readonly cut: () => void }>((resolve) => {
        const sockets = new Set<Socket>()
        const server = createServer((client) => {
          const upstream = createConnection(target, "127.0.0.1")
          for (const socket of [client, upstream]) {
            sockets.add(socket)
            socket.on("error", () => socket.destroy())
            socket.on("close", () => sockets.delete(socket))
          }
          client.pipe(upstream).pipe(client)
        })
        const cut = () => {
          server.close()
          for (const socket of sockets) socket.destroy()
        }
        server.listen(0, "127.0.0.1", () => resolve({ port: (server.address() as { port: number }).port, cut }))
      })
    ),
    ({ cut }) => Effect.sync(cut)
  )

/** A node of the fleet: the shared store and secret, Twilio's callbacks to `publicUrl` (node A). */
const node = (
  port: number,
  publicUrl: string,
  restUrl: string,
  storeUrl = postgres!.url
): Partial<ServerOptions> & { readonly secret: string; readonly agents: ServeOptions["agents"] } => ({
  port,
  secret: SECRET,
  resumeSeconds: 30,
  agents,
  store: Option.some(Redacted.make(storeUrl)),
  publicUrl: Option.some(publicUrl),
  twilioApi: Option.some({
    accountSid: Mock.ACCOUNT_SID,
    authToken: Redacted.make(Mock.AUTH_TOKEN),
    baseUrl: restUrl,
    streamUrl: Option.some(`${publicUrl.replace("http:", "ws:")}/twilio`)
  })
})

const twilioToken = () => Token.mint(Redacted.make(SECRET), 600, Date.now(), "twilio").token

describe("a transfer's outcome reaches the node holding it (issue 34, issue 35)", () => {
  it.live("a /twilio call resumed on node B transfers, Twilio posts the callbacks to node A: B's agent gets Busy and speaks, then Answered ends the call", () =>
    Effect.gen(function*() {
      assert.isDefined(postgres, "the private PostgreSQL cluster")
      const rest = yield* Mock.make([CALL_SID], { [BUSY]: { answers: "busy" }, [ANSWERS]: { answers: "press", digit: "1" } })
      const [portA, portB] = [yield* freePort, yield* freePort]
      const publicUrl = `http://127.0.0.1:${portA}`
      const outputsA: Array<string> = []
      const outputsB: Array<string> = []
      const a = yield* start(desk, model(outputsA), node(portA, publicUrl, rest.url))
      const b = yield* start(desk, model(outputsB), node(portB, publicUrl, rest.url))
      let streams: Array<{ caller: Client; sid: string }> = []
      // Twilio's part: a <Dial> replacing the call's TwiML stops the stream that carries it.
      rest.onTwiml = (_callSid, twiml) => {
        if (!/<Dial/.test(twiml)) return
        const { caller, sid } = streams.at(-1)!
        TwilioStream.stopStream(CALL, caller, sid)
      }

      // The call starts on node A; its stream drops and Twilio reconnects it to node B.
      const first = yield* connect(`${a.ws}/twilio?token=${twilioToken()}`)
      streams = [{ caller: first, sid: "MZ1" }]
      TwilioStream.startStream(CALL, first, "MZ1")
      TwilioStream.press(first, "MZ1", "0#")
      yield* wait(() => first.waitFor((f) => f.event === "mark", "node A's first answer"))
      const onA = a.state.resumer.list()[0]!
      const resumeToken = (yield* onA.mint).token
      first.socket.terminate()
      const second = yield* connect(`${b.ws}/twilio?token=${twilioToken()}`)
      streams.push({ caller: second, sid: "MZ2" })
      TwilioStream.startStream(CALL, second, "MZ2", { resumeToken })
      yield* until("the call resumed on node B", () => b.state.resumer.find(onA.id) !== undefined)

      // Busy: the dial's action goes to node A, which answers it with the stream back to the agent.
      TwilioStream.press(second, "MZ2", "1#")
      yield* until("the dial's action", () => rest.posted.some((p) => p.params["DialCallStatus"] === "busy"))
      const busy = rest.posted.find((p) => p.params["DialCallStatus"] === "busy")!
      assert.isTrue(busy.url.startsWith(`${publicUrl}/twilio/transfer/`), "Twilio posted the dial's action to node A")
      assert.strictEqual(busy.status, 200, `node A answered the dial's action: ${busy.answer}`)
      const back = /<Parameter name="resumeToken" value="([^"]*)"/.exec(busy.answer)![1]!
      assert.match(back, new RegExp(`^resume\\.${onA.id}\\.`))
      second.socket.close(1000)
      const third = yield* connect(`${b.ws}/twilio?token=${twilioToken()}`)
      streams.push({ caller: third, sid: "MZ3" })
      TwilioStream.startStream(CALL, third, "MZ3", { resumeToken: back })
      const mark = yield* wait(() => third.waitFor((f) => f.event === "mark", "node B's agent speaking after the busy transfer"))
      assert.strictEqual(mark.streamSid, "MZ3")
      assert.deepStrictEqual(outputsB, ["The transfer failed: the line was busy (DialCallStatus=busy). Tell the caller and offer another way to help."])
      assert.deepStrictEqual(outputsA, [], "node A ran no transfer")

      // Answered: the person's leg answers (posted to node A); node B's transfer returns Answered and the call ends.
      TwilioStream.press(third, "MZ3", "2#")
      const closed = yield* wait(() => third.closed)
      assert.deepStrictEqual(closed, { code: 1000, reason: "the call was transferred (CallStatus=in-progress)" })
      yield* until("the dial's action after the bridged call", () => rest.posted.some((p) => p.params["DialCallStatus"] === "completed"))
      const completed = rest.posted.find((p) => p.params["DialCallStatus"] === "completed")!
      assert.isTrue(completed.url.startsWith(publicUrl))
      assert.strictEqual(completed.answer, "<Response><Hangup/></Response>")
      assert.deepStrictEqual(rest.posted.map((p) => p.status), rest.posted.map(() => 200), "every callback answered on node A")
    }).pipe(Effect.scoped), 60_000)

  it.live("a transfer whose node died: another node answers its callback from the record and sends the caller back; the session resumed there completes the transfer task with the recorded NoAnswer, and the agent tells the caller", () =>
    Effect.gen(function*() {
      const rest = yield* Mock.make([CALL_SID], { [RINGS]: { answers: "rings" } })
      const [portA, portB] = [yield* freePort, yield* freePort]
      const publicUrl = `http://127.0.0.1:${portA}`
      // Node B reaches the store through a relay: cutting it is B's death as the store sees it.
      const toStore = yield* relay(postgres!.port)
      const onA: Array<string> = []
      const a = yield* start(desk, model(onA), node(portA, publicUrl, rest.url))
      const b = yield* start(desk, model([]), node(portB, publicUrl, rest.url, postgres!.url.replace(`:${postgres!.port}/`, `:${toStore.port}/`)))
      // The call lives on node B, whose agent starts a transfer that rings (no callback yet).
      const caller = yield* connect(`${b.ws}/twilio?token=${twilioToken()}`)
      TwilioStream.startStream(CALL, caller, "MZ1")
      TwilioStream.press(caller, "MZ1", "0#")
      yield* wait(() => caller.waitFor((f) => f.event === "mark", "node B's first answer"))
      const sessionId = b.state.resumer.list()[0]!.id
      const store = Context.get(yield* Layer.build(SessionStoreConfig.fromUrl(postgres!.url)), SessionStore)
      const records = TransferRecords.make(store, "test")
      TwilioStream.press(caller, "MZ1", "3#")
      let live: Option.Option<{ readonly id: string }> = Option.none()
      for (let tries = 0; Option.isNone(live); tries++) {
        assert.isBelow(tries, 300, "node B recorded its transfer")
        yield* Effect.sleep("50 millis")
        live = yield* records.ofSession(sessionId)
      }
      const id = live.value.id
      // Node B dies with the transfer in flight: its journal stops, its store is cut, its stream is gone.
      Durable.crash(sessionId)
      toStore.cut()
      caller.socket.terminate()

      // Twilio posts the dial's action to node A, which never held the transfer.
      const url = `${publicUrl}/twilio/transfer/${id}/dial`
      const params = { AccountSid: Mock.ACCOUNT_SID, CallSid: CALL_SID, DialCallStatus: "no-answer" }
      const answer = yield* wait(() =>
        fetch(url, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": TwilioTransfer.signature(Redacted.make(Mock.AUTH_TOKEN), url, params) },
          body: new URLSearchParams(params).toString()
        }).then(async (r) => ({ status: r.status, body: await r.text() }))
      )
      assert.strictEqual(answer.status, 200)
      const back = /<Parameter name="resumeToken" value="([^"]*)"/.exec(answer.body)?.[1]
      assert.match(back ?? "", new RegExp(`^resume\\.${sessionId}\\.`), `the stream back to the session: ${answer.body}`)
      const record = yield* records.read(id)
      assert.deepStrictEqual(Option.map(record, (r) => r.outcome), Option.some(Option.some(Transfer.outcome("NoAnswer", "DialCallStatus=no-answer"))))

      // The stream back resumes the session on node A: the transfer task held the floor, its
      // onRestore reads the record, and the agent's tool call gets NoAnswer; the agent speaks
      // (nothing pressed on this stream).
      const again = yield* connect(`${a.ws}/twilio?token=${twilioToken()}`)
      TwilioStream.startStream(CALL, again, "MZ2", { resumeToken: back! })
      yield* wait(() => again.waitFor((f) => f.event === "mark", "the agent on node A telling the caller"))
      const resumed = a.state.resumer.find(sessionId)
      assert.isDefined(resumed)
      assert.deepStrictEqual(onA, [JSON.stringify(Transfer.outcome("NoAnswer", "DialCallStatus=no-answer"))])
      const said = (yield* resumed!.line.session.history).items.filter((item) => item._tag === "Message" && item.role === "assistant").at(-1)
      assert.strictEqual(said?._tag === "Message" ? said.text : undefined, "Nobody picked up; I can help you myself.")
      // The record is ended once its outcome was taken.
      assert.isTrue(Option.isNone(yield* records.ofSession(sessionId)))
    }).pipe(Effect.scoped), 60_000)

  it.live("one node with a durable store: the callbacks reach the node holding the transfer, which settles it through the record: Busy, then Answered", () =>
    Effect.gen(function*() {
      const rest = yield* Mock.make([CALL_SID], { [BUSY]: { answers: "busy" }, [ANSWERS]: { answers: "press", digit: "1" } })
      const port = yield* freePort
      const outputs: Array<string> = []
      const server = yield* start(desk, model(outputs), node(port, `http://127.0.0.1:${port}`, rest.url))
      let streams: Array<{ caller: Client; sid: string }> = []
      rest.onTwiml = (_callSid, twiml) => {
        if (!/<Dial/.test(twiml)) return
        const { caller, sid } = streams.at(-1)!
        TwilioStream.stopStream(CALL, caller, sid)
      }
      const first = yield* connect(`${server.ws}/twilio?token=${twilioToken()}`)
      streams = [{ caller: first, sid: "MZ1" }]
      TwilioStream.startStream(CALL, first, "MZ1")
      TwilioStream.press(first, "MZ1", "1#")
      yield* until("the dial's action", () => rest.posted.some((p) => p.params["DialCallStatus"] === "busy"))
      const busy = rest.posted.find((p) => p.params["DialCallStatus"] === "busy")!
      assert.strictEqual(busy.status, 200, busy.answer)
      first.socket.close(1000)
      const second = yield* connect(`${server.ws}/twilio?token=${twilioToken()}`)
      streams.push({ caller: second, sid: "MZ2" })
      TwilioStream.startStream(CALL, second, "MZ2", { resumeToken: /<Parameter name="resumeToken" value="([^"]*)"/.exec(busy.answer)![1]! })
      yield* wait(() => second.waitFor((f) => f.event === "mark", "the agent after the busy transfer"))
      assert.deepStrictEqual(outputs, ["The transfer failed: the line was busy (DialCallStatus=busy). Tell the caller and offer another way to help."])
      TwilioStream.press(second, "MZ2", "2#")
      assert.deepStrictEqual(yield* wait(() => second.closed), { code: 1000, reason: "the call was transferred (CallStatus=in-progress)" })
    }).pipe(Effect.scoped), 60_000)
})
