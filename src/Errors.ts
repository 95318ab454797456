import { Data, Schema } from "effect"
import type { ErrorEvent } from "./Events.ts"
import type { RunResult } from "./RunResult.ts"

/**
 * An agent tried to speak, reply or start a task without holding the floor. `reason`:
 * `not_holder` (another agent holds it), `no_holder` (none does yet), `agent_closed` (the agent
 * has left the session), `session_closed`.
 *
 * @since 0.1.0
 * @category errors
 */
export class FloorError extends Schema.TaggedError<FloorError>()("FloorError", {
  agent: Schema.String,
  reason: Schema.Literals(["not_holder", "no_holder", "agent_closed", "session_closed"]),
  message: Schema.String
}) {}

/**
 * An `AgentTask` did not complete with a result.
 *
 * @since 0.1.0
 * @category errors
 */
export class TaskError extends Schema.TaggedError<TaskError>()("TaskError", {
  task: Schema.String,
  reason: Schema.Literals(["failed", "cancelled", "invalid"]),
  message: Schema.String,
  cause: Schema.optional(Schema.Unknown)
}) {}

/**
 * An agent that has to answer has no language model: not its own (`Agent.make({ model })`), not
 * the session's (a `LanguageModel` layer provided where the session starts), and no realtime
 * model. `AgentSession.start` fails with it for the agent it starts with; a reply fails with it
 * for an agent whose model is gone (its own model's layer failed to build).
 *
 * @since 0.1.0
 * @category errors
 */
export class MissingModel extends Schema.TaggedError<MissingModel>()("MissingModel", {
  agent: Schema.String,
  message: Schema.String
}) {
  static of(agent: string): MissingModel {
    return new MissingModel({
      agent,
      message: `${agent} has no language model: provide one where the session starts (a LanguageModel layer, such as ` +
        `OpenAiChat.layerConfigFetch or ScriptedModel.layer) or give the agent its own (Agent.make({ model }))`
    })
  }
}

/**
 * A model's response stream said it failed (an `error` part that is not an `AiError`).
 *
 * @since 0.1.0
 * @category errors
 */
export class ModelStreamError extends Schema.TaggedError<ModelStreamError>()("ModelStreamError", {
  agent: Schema.String,
  message: Schema.String,
  cause: Schema.optional(Schema.Unknown)
}) {}

/**
 * User input the session does not take (too long); nothing of it was recorded.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  message: Schema.String
}) {}

/**
 * The session is closed; nothing more can be sent to it.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionClosed extends Schema.TaggedError<SessionClosed>()("SessionClosed", {
  message: Schema.String
}) {}

/**
 * `session.run` failed to get an answer: the model (or the realtime connection) failed and the
 * turn produced no reply and no handoff. It carries the run's result, with the error events, so
 * a caller can show what happened; a turn that answered despite a failed step is not a failure.
 *
 * @since 0.1.0
 * @category errors
 */
export class TurnFailed extends Data.TaggedError("TurnFailed")<{
  readonly message: string
  readonly errors: ReadonlyArray<ErrorEvent>
  readonly result: RunResult
}> {}
