/** A terminal for one session (`ConsoleTransport`): text in with line editing, the agents' words, tools and handoffs out. */
export * as ConsoleTransport from "./ConsoleTransport.ts"
export type { Style } from "./Style.ts"
export * as ConsoleApp from "./App.ts"
