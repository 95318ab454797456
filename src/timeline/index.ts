/** The timeline picture's public surface (the package maps `baton/timeline` here). */
export * from "../Timeline.ts"
