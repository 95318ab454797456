/**
 * What the ready-made tasks share: a task that asks the caller for one value, checks it with its
 * Schema, reads it back and completes only once the caller confirmed it. Its model has three
 * tools: `record_<field>` (the value as heard: normalized and checked; a bad one is an error
 * output, so the model asks again), `confirm_<field>` (the same value once the caller said yes:
 * refused unless it was recorded and read back first) and `cannot_provide` (the caller will not
 * or cannot give it: the task fails with that reason). A correction is a new `record_<field>`.
 * Keypad presses come as a user turn `DTMF: <digits>` (the phone bridge gathers them).
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Schema } from "effect"
import * as Agent from "../Agent.ts"
import * as AgentTask from "../AgentTask.ts"
import { CurrentAgent } from "../CurrentAgent.ts"
import * as Tool from "../Tool.ts"

/**
 * How a ready-made task reads and checks its value.
 *
 * @since 0.1.0
 * @category models
 */
export interface Spec<A> {
  /** The task's name (default `collect_<field>`). */
  readonly name?: string
  /** What is asked for, in words: "email address". */
  readonly what: string
  /** The tools' parameter: `email` gives `record_email` and `confirm_email`. */
  readonly field: string
  /** What the value must be: the result's type, and its checks. */
  readonly schema: Schema.Codec<A, unknown, never, never>
  /** From what the model heard (spoken forms, spaces) to what `schema` decodes; an error message when it cannot. */
  readonly parse: (heard: string) => unknown | Error
  /** How the agent reads it back. */
  readonly readBack: (value: A) => string
  /** Said about the value in the instructions (its format, keypad use). */
  readonly hint?: string
  /** Replaces the default instructions' first sentence (ask for it your way). */
  readonly instructions?: string
}

const decodeWith = <A>(spec: Spec<A>, heard: string): Effect.Effect<A, Error> =>
  Effect.suspend(() => {
    const parsed = spec.parse(heard)
    if (parsed instanceof Error) return Effect.fail(parsed)
    const decoded = Schema.decodeUnknownResult(spec.schema)(parsed)
    return decoded._tag === "Success"
      ? Effect.succeed(decoded.success)
      : Effect.fail(new Error(`"${heard}" is not a valid ${spec.what}. Ask the caller for it again.`))
  })

/** Whether the context has this value recorded and read back (a `record_<field>` output that reads it back). */
const wasReadBack = (spec: { readonly field: string }, readBack: string) =>
  CurrentAgent.use((agent) =>
    Effect.map(agent.chatContext, (context) =>
      context.items.some((item) =>
        item._tag === "FunctionCallOutput" && item.name === `record_${spec.field}` && !item.isError && item.output.includes(`"${readBack}"`)
      )
    )
  )

/**
 * A task that collects one value of type `A` with a confirmation step (see the module's comment).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <A>(spec: Spec<A>): AgentTask.AgentTask<A> => {
  const name = spec.name ?? `collect_${spec.field}`
  const Parameters = Schema.Struct({ [spec.field]: Schema.String.annotate({ description: `The ${spec.what} as the caller gave it` }) })
  const heardOf = (params: Record<string, unknown>) => String(params[spec.field] ?? "")
  const task: AgentTask.AgentTask<A> = AgentTask.make<A>({
    name,
    instructions: [
      spec.instructions ?? `Ask the caller for their ${spec.what}.`,
      spec.hint ?? "",
      `When they give it, call record_${spec.field} with it; then read it back exactly as the tool tells you and ask them to confirm.`,
      `If they confirm, call confirm_${spec.field} with the same value; if they correct it, call record_${spec.field} with the correction.`,
      "Keypad presses arrive as a message 'DTMF: <digits>'.",
      "If they will not or cannot give it, call cannot_provide with the reason."
    ].filter((line) => line !== "").join(" "),
    tools: [
      Tool.make(`record_${spec.field}`, {
        description: `Record the caller's ${spec.what} as heard (it is checked and must then be read back)`,
        parameters: Parameters,
        handler: (params) =>
          Effect.map(decodeWith(spec, heardOf(params)), (value) =>
            `Read it back to the caller as "${spec.readBack(value)}" and ask whether it is right.`)
      }),
      Tool.make(`confirm_${spec.field}`, {
        description: `The caller confirmed the ${spec.what} read back to them: complete with it`,
        parameters: Parameters,
        handler: (params) =>
          Effect.gen(function*() {
            const value = yield* decodeWith(spec, heardOf(params))
            if (!(yield* wasReadBack(spec, spec.readBack(value)))) {
              return yield* Effect.fail(new Error(`Record the ${spec.what} with record_${spec.field} and read it back before confirming it.`))
            }
            return yield* AgentTask.complete(task, value)
          })
      }),
      Tool.make("cannot_provide", {
        description: `The caller will not or cannot give their ${spec.what}`,
        parameters: Schema.Struct({ reason: Schema.String }),
        handler: ({ reason }) => AgentTask.fail(task, `the caller did not give their ${spec.what}: ${reason}`)
      })
    ],
    onEnter: Agent.reply().pipe(Effect.asVoid)
  })
  return task
}
