import { defineConfig } from "vitest/config"

// `@baton-voice/baton` (the examples import it by name) resolves to the sources in this
// repository through the `baton-source` export condition; the built package has no such files.
const conditions = ["baton-source", "node", "import", "default"]

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ["baton-source"] } },
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    // A work token released twice fails the test that did it (see the file).
    setupFiles: ["test/setup/tokens.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000
  }
})
