/**
 * The tools an actor offers its model, gathered when the actor is built: the agent's, a task's
 * extras, the session's, and the controls of cancellable background calls. An agent's toolsets
 * (an MCP server's) add theirs once the actor has opened them, and again whenever their tools
 * change: the list is rebuilt when it is next read (a model call, a tool call) after a change.
 */
import { type Cause, Effect, Scope } from "effect"
import type { Tool as AiTool, Toolkit } from "effect/ai"
import type { Agent } from "../../Agent.ts"
import type { Tool } from "../../Tool.ts"
import type * as Toolset from "../../Toolset.ts"
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
export const toolsOf = (
  core: SessionCore,
  agent: Agent,
  extraTools: ReadonlyArray<Tool>,
  owner: Background.Owner,
  toolsetTools: ReadonlyArray<Tool> = []
): Tools => {
  // An agent that only talks (a greeter, the end of a transfer) shares one empty set.
  if (agent.tools.length === 0 && toolsetTools.length === 0 && extraTools.length === 0 && core.sessionTools.length === 0) return noTools
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
  add(toolsetTools)
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

/** An actor's tools: fixed for most agents; with toolsets, rebuilt after any of them changed. */
export interface ToolView {
  current: Tools
  /** What `current` is rebuilt from (with the toolsets' tools). */
  readonly core: SessionCore
  readonly agent: Agent
  readonly extraTools: ReadonlyArray<Tool>
  readonly owner: Background.Owner
  /** The toolsets opened so far, and the sum of their versions `current` was built at. */
  readonly sources: Array<Toolset.Source>
  seen: number
}

// A record, no closure: a handoff builds an actor, and its view, on its path.
export const view = (core: SessionCore, agent: Agent, extraTools: ReadonlyArray<Tool>, owner: Background.Owner): ToolView => ({
  current: toolsOf(core, agent, extraTools, owner),
  core,
  agent,
  extraTools,
  owner,
  sources: [],
  seen: 0
})

/**
 * Brings `actor`'s tool fields up to date with its toolsets (a no-op for an agent without any):
 * called before its tools are read for a model call or a tool call.
 */
export const refresh = (actor: {
  readonly inner: { readonly tools: ToolView }
  tools: Tools["named"]
  toolkit: Tools["toolkit"]
  definitions: Tools["definitions"]
}): void => {
  const view = actor.inner.tools
  if (view.sources.length === 0) return
  const before = view.current
  const now = current(view)
  if (now === before && actor.tools === now.named) return
  actor.tools = now.named
  actor.toolkit = now.toolkit
  actor.definitions = now.definitions
}

/** The tools as they are now (a plain read unless the agent has toolsets). */
export const current = (view: ToolView): Tools => {
  if (view.sources.length === 0) return view.current
  let version = 0
  for (const source of view.sources) version += source.version()
  if (version !== view.seen) {
    view.seen = version
    view.current = toolsOf(view.core, view.agent, view.extraTools, view.owner, view.sources.flatMap((source) => source.tools()))
  }
  return view.current
}

/**
 * Opens the agent's toolsets in the actor's Scope, before the actor handles its first message. A
 * toolset that cannot be opened is an `error` event naming it and the fix; the agent goes on
 * with its other tools. Its requirements come from the session's context, as a model's do.
 */
export const openToolsets = (
  view: ToolView,
  core: SessionCore,
  agent: Agent,
  scope: Scope.Scope
): Effect.Effect<void> =>
  Effect.forEach(agent.toolsets ?? [], (toolset) =>
    (toolset.open as Effect.Effect<Toolset.Source, Toolset.ToolsetError, Scope.Scope>).pipe(
      Scope.provide(scope),
      Effect.map((source) => {
        view.sources.push(source)
        // Forces a rebuild on the next read.
        view.seen = -1
      }),
      Effect.catchCause((cause) =>
        Effect.sync(() => {
          const message = messageOf(cause, toolset.name)
          core.emit({ type: "error", agent: agent.name, source: "tool", message, recoverable: true })
        })
      )
    ), { discard: true })

const messageOf = (cause: Cause.Cause<Toolset.ToolsetError>, name: string): string => {
  for (const reason of cause.reasons) {
    if (reason._tag === "Fail") return reason.error.message
  }
  return `the toolset ${name} could not be opened`
}
