/**
 * Where the handoff's time goes (a profiling aid, not part of `npm run bench`):
 *   node --expose-gc bench/baton/phases.ts
 * Runs the handoff scenario of handoff.ts with timestamps at each step (through a wrapping
 * model and a TextOutput, no change to baton) and prints the median of each phase, for three
 * models that stream the same parts:
 *   scripted    layers/testing/ScriptedModel (what the benchmark uses); baton reads its parts
 *               directly (services/ModelParts.ts), as it does those of layers/openai
 *   streamText  a provider built with effect/ai `LanguageModel.make` and nothing else: baton
 *               goes through `streamText`, as it does for any other provider
 *   bare        fixed parts read directly: what is left is baton's own machinery
 */
import { Context, Effect, Layer, Stream } from "effect"
import { LanguageModel, type Response } from "effect/ai"
import * as ScriptedModel from "../../layers/testing/ScriptedModel.ts"
import * as ModelParts from "../../services/ModelParts.ts"
import { TextOutput } from "../../services/TextOutput.ts"
import { Agent, AgentSession, Handoff, Tool } from "../../src/index.ts"
import { envInt, quantile } from "./stats.ts"

const usage = { inputTokens: { total: 0 }, outputTokens: { total: 0 } }
const partsA: ReadonlyArray<Response.StreamPartEncoded> = [{ type: "tool-call", id: "call_1", name: "transfer", params: {} }, { type: "finish", reason: "tool-calls", usage }]
const partsB: ReadonlyArray<Response.StreamPartEncoded> = [
  { type: "text-start", id: "text_0" },
  { type: "text-delta", id: "text_0", delta: "Hello from AgentB" },
  { type: "text-end", id: "text_0" },
  { type: "finish", reason: "stop", usage }
]
const rules: ReadonlyArray<ScriptedModel.Rule> = [
  { when: { user: "go", agent: "AgentA" }, reply: { toolCalls: [{ name: "transfer" }] } },
  { when: { instructions: "greet", agent: "AgentB" }, reply: { text: "Hello from AgentB" } }
]

type Variant = "scripted" | "streamText" | "bare"
const STEPS = ["runCall", "modelACall", "modelAEnd", "toolStart", "onEnter", "modelBCall", "textStart", "textEnd", "replyDone", "runDone"] as const
type Step = (typeof STEPS)[number]

const buildModel = (variant: Variant) =>
  Effect.gen(function*() {
    if (variant === "scripted") return Context.get(yield* Layer.build(ScriptedModel.layer(rules)), LanguageModel.LanguageModel)
    let calls = 0
    const fixed = () => Stream.fromIterable(calls++ === 0 ? partsA : partsB)
    const made = yield* LanguageModel.make({ streamText: fixed, generateText: () => Effect.die("not used") })
    return variant === "streamText" ? made : ModelParts.withParts(made, fixed)
  })

const once = (variant: Variant) =>
  Effect.scoped(Effect.gen(function*() {
    const t: Partial<Record<Step, number>> = {}
    const stamp = (step: Step) => void (t[step] ??= performance.now())
    const agentB = Agent.make({
      name: "AgentB",
      instructions: "You are AgentB",
      onEnter: Effect.gen(function*() {
        stamp("onEnter")
        const handle = yield* Agent.reply({ instructions: "greet" })
        yield* handle.wait
        stamp("replyDone")
      })
    })
    const agentA = Agent.make({
      name: "AgentA",
      instructions: "You are AgentA",
      tools: [Tool.make("transfer", { description: "Transfer to AgentB", handler: () => (stamp("toolStart"), Effect.succeed(Handoff.to(agentB))) })]
    })
    const model = yield* buildModel(variant)
    let calls = 0
    const timing = <A, E>(stream: Stream.Stream<A, E>) => {
      const [call, end]: [Step, Step] = calls++ === 0 ? ["modelACall", "modelAEnd"] : ["modelBCall", "textEnd"]
      stamp(call)
      return stream.pipe(Stream.ensuring(Effect.sync(() => stamp(end))))
    }
    const parts = ModelParts.partsOf(model)
    const timed = parts
      ? ModelParts.withParts(model, (options) => timing(parts(options)))
      // `streamText` is overloaded on the toolkit: the wrapper forwards whatever it is given.
      : { ...model, streamText: (options: any) => timing(model.streamText(options) as Stream.Stream<unknown, unknown>) } as LanguageModel.LanguageModel
    const textOutput = { start: () => Effect.sync(() => stamp("textStart")), write: () => Effect.void, end: () => Effect.void }
    const session = yield* AgentSession.start({ agent: agentA }).pipe(
      Effect.provideService(LanguageModel.LanguageModel, timed),
      Effect.provideService(TextOutput, textOutput)
    )
    yield* session.idle
    stamp("runCall")
    yield* session.run("go")
    stamp("runDone")
    if ((yield* session.currentAgent) !== agentB) return yield* Effect.die(`handoff failed (${variant})`)
    return t as Record<Step, number>
  }))

const n = envInt("N", 1000)
const warmup = envInt("WARMUP", 300)
const rows: Record<Variant, Array<Record<Step, number>>> = { scripted: [], streamText: [], bare: [] }
const variants: ReadonlyArray<Variant> = ["scripted", "streamText", "bare"]
// Interleaved so that machine noise hits every variant alike.
for (let i = 0; i < warmup + n; i++) {
  for (const variant of variants) {
    const t = await Effect.runPromise(once(variant))
    if (i >= warmup) rows[variant].push(t)
  }
}
const median = (variant: Variant, from: Step, to: Step) =>
  quantile(rows[variant].map((t) => t[to] - t[from]).sort((a, b) => a - b), 0.5)!.toFixed(3)
const line = (label: string, from: Step, to: Step) => `| ${label} | ${variants.map((v) => median(v, from, to)).join(" | ")} |`
console.log(`Median ms over ${n} runs after ${warmup} warm-up (variants interleaved)\n`)
console.log(`| phase | ${variants.join(" | ")} |\n|---|${variants.map(() => "---:").join("|")}|`)
for (let i = 1; i < STEPS.length; i++) console.log(line(`${STEPS[i - 1]} → ${STEPS[i]}`, STEPS[i - 1]!, STEPS[i]!))
console.log(line("**toolStart → replyDone**", "toolStart", "replyDone"))
console.log(line("**runCall → runDone**", "runCall", "runDone"))
