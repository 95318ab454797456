/**
 * What a fiber of an actor's flow carries in its context: whether it holds a work token of its
 * own, the hook lane it may free, and the tool call it runs for. They live apart from `Actor.ts`
 * so that the parts that read them (tool batches, tasks) need only the actor's type, not its
 * module: no runtime import circle in src/ (test/src/import-graph.test.ts).
 */
import { Context } from "effect"
import type { Actor } from "./actor/Actor.ts"
import type { Speech } from "../Speech.ts"

/** Whether a fiber holds a work token of its own (hooks, tool calls of a batch: see Work.ts). */
export interface WorkTokenCell {
  held: boolean
}
export const WorkToken = Context.Reference<WorkTokenCell>("baton/WorkToken", { defaultValue: () => ({ held: false }) })

/** In a hook: lets the next hook of the actor's lane start (called when the hook waits for a task). */
export const HookLane = Context.Reference<(() => void) | undefined>("baton/HookLane", { defaultValue: () => undefined })

/** The tool call a fiber runs for, if any; `foreground`: its batch has not heard from it yet
 * (before a progress report moves it to the background, the batch will read what it asks). */
export const CurrentCall = Context.Reference<
  { readonly actor: Actor; readonly speech: Speech; readonly callId: string; readonly foreground: () => boolean } | undefined
>(
  "baton/CurrentCall",
  { defaultValue: () => undefined }
)
