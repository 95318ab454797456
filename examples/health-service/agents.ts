/**
 * Seed 004's health-service flow: a front desk whose onEnter runs a TaskGroup of three tasks
 * (verify the caller's intent, identify the patient, schedule a visit), then confirms the
 * booking with the group's results.
 */
import { Effect, Schema } from "effect"
import { Agent, AgentTask, TaskGroup, Tool } from "@baton-voice/baton"

export interface Intent {
  readonly intent: "schedule" | "cancel" | "question"
}
export interface Patient {
  readonly name: string
  readonly dateOfBirth: string
}
export interface Visit {
  readonly day: string
  readonly time: string
}

export const verifyIntent: AgentTask.AgentTask<Intent> = AgentTask.make<Intent>({
  name: "verify_intent",
  instructions: "Find out why the caller is calling: to schedule a visit, cancel one, or ask a question.",
  tools: [
    Tool.make("confirm_intent", {
      description: "Record why the caller is calling",
      parameters: Schema.Struct({ intent: Schema.Literals(["schedule", "cancel", "question"]) }),
      handler: ({ intent }) => AgentTask.complete(verifyIntent, { intent })
    })
  ],
  onEnter: Agent.reply({ instructions: "ask how you can help" }).pipe(Effect.asVoid)
})

export const identifyPatient: AgentTask.AgentTask<Patient> = AgentTask.make<Patient>({
  name: "identify_patient",
  instructions: "Get the patient's full name and date of birth (YYYY-MM-DD).",
  tools: [
    Tool.make("record_patient", {
      description: "Record the patient's identity",
      parameters: Schema.Struct({
        name: Schema.String.check(Schema.isMinLength(2)),
        date_of_birth: Schema.String.check(Schema.isPattern(/^\d{4}-\d{2}-\d{2}$/))
      }),
      handler: ({ name, date_of_birth }) => AgentTask.complete(identifyPatient, { name, dateOfBirth: date_of_birth })
    })
  ],
  onEnter: Agent.reply({ instructions: "ask for the patient's name and date of birth" }).pipe(Effect.asVoid)
})

export const scheduleVisit: AgentTask.AgentTask<Visit> = AgentTask.make<Visit>({
  name: "schedule_visit",
  instructions: "Agree on a day and time for the visit.",
  tools: [
    Tool.make("book_visit", {
      description: "Book the visit",
      parameters: Schema.Struct({ day: Schema.String, time: Schema.String }),
      handler: ({ day, time }) => AgentTask.complete(scheduleVisit, { day, time })
    })
  ],
  onEnter: Agent.reply({ instructions: "ask when the patient would like to come in" }).pipe(Effect.asVoid)
})

export const intake = TaskGroup.make({
  name: "intake",
  tasks: [
    { id: "intent", description: "why the caller is calling", task: verifyIntent },
    { id: "patient", description: "who the patient is", task: identifyPatient },
    { id: "visit", description: "when the visit is", task: scheduleVisit }
  ]
})

export const frontDesk: Agent.Agent = Agent.make({
  name: "front_desk",
  instructions: "You are the front desk of a small clinic. Be brief and warm.",
  onEnter: Effect.gen(function*() {
    const results = yield* AgentTask.run(intake)
    const patient = results["patient"] as Patient
    const visit = results["visit"] as Visit
    yield* Agent.reply({ instructions: `confirm the booking for ${patient.name} on ${visit.day} at ${visit.time}` })
  })
})
