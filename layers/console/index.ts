/**
 * A terminal for one session (`ConsoleTransport`): text in with line editing, the agents' words, tools and handoffs out.
 *
 * @module @baton-voice/baton/console
 */
export * as ConsoleTransport from "./ConsoleTransport.ts"
export type { Style } from "./Style.ts"
export type { Terminal } from "./LineEditor.ts"
export * as ConsoleApp from "./App.ts"
