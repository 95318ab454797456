/**
 * The core of baton: agents as values (`Agent`), their tools (`Tool`), handoffs (`Handoff`),
 * tasks that borrow the floor (`AgentTask`, `TaskGroup`), sessions (`AgentSession`), chat
 * contexts, run results, the timeline picture, events and errors.
 *
 * @module @baton-voice/baton
 */
export * as Agent from "./Agent.ts"
export type { Agent as AgentValue } from "./Agent.ts"
export * as AgentSession from "./AgentSession.ts"
export * as AgentTask from "./AgentTask.ts"
export * as CallTools from "./CallTools.ts"
export * as ChatContext from "./ChatContext.ts"
export { Collect, CollectAddress, CollectDate, CollectDigits, CollectEmail, CollectPhone } from "./tasks/index.ts"
export { CurrentAgent, type ReplyOptions, type SayOptions } from "./CurrentAgent.ts"
export type { ErrorInfo, ErrorReason } from "./ErrorInfo.ts"
export * from "./Errors.ts"
export type * from "./Events.ts"
export * as Guardrail from "./Guardrail.ts"
export * as Handoff from "./Handoff.ts"
export * as Human from "./Human.ts"
export type { HandBackOptions, TakeOverOptions } from "./internal/HumanFloor.ts"
export * as Judge from "./Judge.ts"
export * as RunResult from "./RunResult.ts"
export * as TaskGroup from "./TaskGroup.ts"
export * as Tool from "./Tool.ts"
export * as Toolset from "./Toolset.ts"
export * as Transfer from "./Transfer.ts"
export * as Turn from "./Turn.ts"
export * as Timeline from "./Timeline.ts"
export type { UsageSummary } from "./observe/Usage.ts"
export type { SpeechHandle, SpeechOutcome, SpeechSource } from "./Speech.ts"
export * as Durability from "./Durability.ts"
