/**
 * For tests and demos: scripted models (chat and realtime) that answer by rules, `Drive` (run a
 * program to completion under `TestClock`), `TextCapture` (what each agent said), `MockTools`
 * (replace an agent's tool handlers in a test without rebuilding the agent), and the
 * simulation's hooks into the runtime (`Faults`: protocol faults to inject; `Diagnostics`: counts
 * of live sessions, actors and fibers, for leak checks).
 *
 * @module @baton-voice/baton/testing
 */
export * as Drive from "./Drive.ts"
export * as ScriptedModel from "./ScriptedModel.ts"
export * as ScriptedRealtime from "./ScriptedRealtime.ts"
export * as TextCapture from "./TextCapture.ts"
export * as MockTools from "../../src/MockTools.ts"
export * as Diagnostics from "../../src/Diagnostics.ts"
export * as Faults from "../../src/Faults.ts"
export { drive } from "./Drive.ts"
export { layer as mockTools } from "../../src/MockTools.ts"
