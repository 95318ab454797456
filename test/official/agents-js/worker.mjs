// An agents-js 1.9 worker (LiveKit's own @livekit/agents, installed in bench/agents-js) for
// test/official/livekit-agents-js.test.ts. Run by that test; it says what it sees on stdout, a
// JSON object a line. Environment: AGENTS_JS_INDEX (file URL of @livekit/agents' dist/index.js),
// LIVEKIT_URL, LIVEKIT_API_KEY, LIVEKIT_API_SECRET, AGENT_NAME, JOB_OUT (see agent.mjs).
const { AgentServer, ServerOptions, initializeLogger } = await import(process.env.AGENTS_JS_INDEX)

const say = (what) => process.stdout.write(`${JSON.stringify(what)}\n`)
initializeLogger({ pretty: false, level: "warn" })

const server = new AgentServer(new ServerOptions({
  agent: new URL("./agent.mjs", import.meta.url).pathname,
  wsURL: process.env.LIVEKIT_URL,
  apiKey: process.env.LIVEKIT_API_KEY,
  apiSecret: process.env.LIVEKIT_API_SECRET,
  agentName: process.env.AGENT_NAME,
  numIdleProcesses: 0,
  host: "127.0.0.1",
  port: 0,
  requestFunc: async (req) => {
    say({ request: req.id, agentName: req.agentName })
    await req.accept("official", `agent-${req.id}`)
  }
}))
server.event.on("worker_registered", (workerId, serverInfo) => say({ registered: workerId, serverInfo: serverInfo?.toJson?.() ?? null }))
process.on("SIGTERM", () => {
  void server.close().finally(() => process.exit(0))
})
server.run().catch((e) => {
  say({ failed: String(e?.stack ?? e) })
  process.exit(1)
})
