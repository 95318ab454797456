import { defineConfig } from "vitest/config"

// `@baton-voice/baton` (the examples import it by name) resolves to the sources in this
// repository through the `baton-source` export condition; the built package has no such files.
const conditions = ["baton-source", "node", "import", "default"]

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ["baton-source"] } },
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000
  }
})
