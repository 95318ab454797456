import { Schema } from "effect"

/** An agent tried to speak, reply or start a task without holding the floor. */
export class FloorError extends Schema.TaggedError<FloorError>()("FloorError", {
  agent: Schema.String,
  message: Schema.String
}) {}

/** An `AgentTask` did not complete with a result. */
export class TaskError extends Schema.TaggedError<TaskError>()("TaskError", {
  task: Schema.String,
  reason: Schema.Literals(["failed", "cancelled", "invalid"]),
  message: Schema.String,
  cause: Schema.optional(Schema.Unknown)
}) {}

/** The session is closed; nothing more can be sent to it. */
export class SessionClosed extends Schema.TaggedError<SessionClosed>()("SessionClosed", {
  message: Schema.String
}) {}
