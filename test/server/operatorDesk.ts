/**
 * The service for the operator's desk tests: its operator line (`/operator`) as the sessions'
 * transferer, as the service gives /ws calls, and `agent` the entry the desk can hand back to;
 * the front desk that transfers to ada, its scripted model, and a transfer offered to ada.
 */
import { Effect, Layer } from "effect"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as OperatorTransfer from "../../server/OperatorTransfer.ts"
import { Agent, AgentTask, Tool } from "../../src/index.ts"
import * as Transfer from "../../src/Transfer.ts"
import { type Client, connect, start, wait } from "./harness.ts"

export const serveWithDesk = (agent: Agent.Agent<any>, models: Layer.Layer<any, any, any>) =>
  Effect.gen(function*() {
    let line: OperatorTransfer.OperatorLine | undefined
    const transferer: Transfer.TransfererService = {
      transport: "operator",
      transfer: (request) => Effect.suspend(() => OperatorTransfer.transferer(line!).transfer(request))
    }
    const server = yield* start(agent, Layer.mergeAll(models, Layer.succeed(Transfer.Transferer, transferer)), { maxLagMs: 0, agents: [agent] } as never)
    line = server.state.operators
    return server
  })

/** The front desk ("front"): its tool `transfer` runs a cold transfer to ada. */
export const front = Agent.make({
  name: "front",
  instructions: "You are the front desk.",
  tools: [Tool.make("transfer", {
    description: "Transfer the caller to a person",
    handler: () => AgentTask.run(Transfer.cold("ada")).pipe(Effect.map(Transfer.describe))
  })]
})

/** The front desk's model: "transfer me" calls `transfer`; front says `returned` to the tool's
 * output, `otherwise` to anything else. */
export const frontModel = (replies: { readonly returned: string; readonly otherwise: string }) =>
  ScriptedModel.layer([
    { when: { user: "transfer me" }, reply: { toolCalls: [{ name: "transfer" }] } },
    { when: { agent: "front" }, reply: (r) => ({ text: r.last.kind === "tool" ? replies.returned : replies.otherwise }) }
  ])

/** Every word of the agents' text the client was sent. */
export const agentText = (client: Client) => client.frames.filter((f) => f.type === "agent_text").map((f) => f.delta).join("")

/** ada online at `server`'s desk, a caller on /ws who asked for a transfer, and ada's offer of it. */
export const offeredToAda = (server: { readonly ws: string }) =>
  Effect.gen(function*() {
    const ada = yield* connect(`${server.ws}/operator/ws?name=ada`)
    const caller = yield* connect(`${server.ws}/ws`)
    yield* wait(() => caller.waitFor((f) => f.type === "ready"))
    caller.sendJson({ type: "user_text", text: "transfer me" })
    const { offer } = yield* wait(() => ada.waitFor((f) => f.type === "offer", "the offer"))
    return { ada, caller, offer }
  })
