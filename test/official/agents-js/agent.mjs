// The agent the agents-js worker of worker.mjs runs for an assigned job: it writes what the job
// was started with (job, room URL, whether it got a token) to JOB_OUT as one JSON line, and ends.
import { appendFileSync } from "node:fs"

const { defineAgent } = await import(process.env.AGENTS_JS_INDEX)

export default defineAgent({
  entry: async (ctx) => {
    const job = ctx.job
    appendFileSync(process.env.JOB_OUT, `${JSON.stringify({
      jobId: job.id,
      agentName: job.agentName,
      dispatchId: job.dispatchId,
      room: job.room?.name,
      url: ctx.info.url,
      token: typeof ctx.info.token === "string" && ctx.info.token.length > 0
    })}\n`)
    ctx.shutdown("done")
  }
})
