/**
 * The tools an actor offers its model, gathered once when the actor is built: the agent's, a
 * task's extras, the session's, and the controls of cancellable background calls.
 */
import { Effect } from "effect"
import type { Tool as AiTool, Toolkit } from "effect/ai"
import type { Agent } from "../../Agent.ts"
import type { Tool } from "../../Tool.ts"
import * as Background from "../Background.ts"
import type { SessionCore } from "../SessionCore.ts"

/** What a non-baton `LanguageModel` is given: the definitions by name, no handlers of its own. */
export type ActorToolkit = Toolkit.WithHandler<Record<string, AiTool.Any>>

/** The toolkit a non-baton `LanguageModel` is given: definitions only (baton runs the calls). */
const toolkitOf = (tools: Record<string, AiTool.Any>): ActorToolkit => ({
  tools,
  handle: () => Effect.die(new Error("baton runs tool calls itself"))
})

/** The tools an actor offers its model: its agent's, a task's extras, the session's, and the
 * controls of cancellable background calls (the first of a name wins). Plain loops: a handoff
 * builds an actor on its path. */
export const toolsOf = (core: SessionCore, agent: Agent, extraTools: ReadonlyArray<Tool>, owner: Background.Owner): Tools => {
  // An agent that only talks (a greeter, the end of a transfer) shares one empty set.
  if (agent.tools.length === 0 && extraTools.length === 0 && core.sessionTools.length === 0) return noTools
  const named = new Map<string, Tool>()
  const sessionTools = new Set<Tool>()
  let cancellable = false
  // `session`: the session's tools, which also take a name held by the very same tool (given to
  // both the agent and the session, it runs as the session's).
  const add = (tools: ReadonlyArray<Tool>, session?: Set<Tool>) => {
    for (const tool of tools) {
      const holder = named.get(tool.name)
      if (holder !== undefined && !(session && holder === tool)) continue
      named.set(tool.name, tool)
      session?.add(tool)
      if (tool.options.cancellable) cancellable = true
    }
  }
  add(agent.tools)
  add(extraTools)
  add(core.sessionTools, sessionTools)
  if (cancellable) {
    const running = () => [...owner.running.values(), ...core.sessionOwner.running.values()]
    add(Background.controlTools(running, core.now))
  }
  const definitions: Array<AiTool.Any> = []
  const byName: Record<string, AiTool.Any> = {}
  for (const tool of named.values()) {
    definitions.push(tool.definition)
    byName[tool.name] = tool.definition
  }
  return { named, sessionTools, toolkit: toolkitOf(byName), definitions }
}

export interface Tools {
  readonly named: ReadonlyMap<string, Tool>
  readonly sessionTools: ReadonlySet<Tool>
  readonly toolkit: ActorToolkit
  readonly definitions: ReadonlyArray<AiTool.Any>
}

const noTools: Tools = {
  named: new Map(),
  sessionTools: new Set(),
  toolkit: toolkitOf({}),
  definitions: []
}
