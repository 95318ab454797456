/**
 * The service for the operator's desk tests: its operator line (`/operator`) as the sessions'
 * transferer, as the service gives /ws calls, and `agent` the entry the desk can hand back to.
 */
import { Effect, Layer } from "effect"
import * as OperatorTransfer from "../../server/OperatorTransfer.ts"
import type { Agent } from "../../src/index.ts"
import * as Transfer from "../../src/Transfer.ts"
import { start } from "./harness.ts"

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
