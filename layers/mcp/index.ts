/**
 * MCP (Model Context Protocol) servers as an agent's tools, over stdio or streamable HTTP, through
 * `@modelcontextprotocol/sdk` (an optional peer: `npm install @modelcontextprotocol/sdk`).
 *
 * @module @baton-voice/baton/mcp
 */
export * as Mcp from "./Mcp.ts"
