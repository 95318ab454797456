/**
 * The API reference (issue 38) is generated from doc comments, so every public export of every
 * subpath in package.json's `exports` carries one in the form Effect's modules use: a summary,
 * `@since` and `@category`. The TypeScript compiler walks each entry's exports, following
 * `export *` and re-exports to the declaring module and `export * as X` into X's members. A
 * namespace module needs a file comment with `@since` and `@packageDocumentation` (the mark
 * TypeDoc needs to show it as the namespace's description).
 */
import { readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import ts from "typescript"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

/** Subpath → the source file it maps to (the `baton-source` condition). */
const entries = (): ReadonlyArray<readonly [string, string]> => {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    exports: Record<string, string | Record<string, string>>
  }
  return Object.entries(pkg.exports).flatMap(([subpath, target]) =>
    typeof target === "object" && target["baton-source"] !== undefined
      ? [[subpath, join(ROOT, target["baton-source"])] as const]
      : []
  )
}

const program = (files: ReadonlyArray<string>): ts.Program => {
  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"))
    }
  })
  if (config === undefined) throw new Error("tsconfig.json did not parse")
  return ts.createProgram(files, config.options)
}

/** The JSDoc written right above a statement (for a re-export of another package's symbol). */
const statementDoc = (node: ts.Node): { summary: boolean; tags: ReadonlySet<string> } => {
  let statement: ts.Node = node
  while (!ts.isSourceFile(statement.parent) && statement.parent !== undefined) statement = statement.parent
  const docs = ts.getJSDocCommentsAndTags(statement).filter(ts.isJSDoc)
  const text = (doc: ts.JSDoc) => ts.getTextOfJSDocComment(doc.comment) ?? ""
  return {
    summary: docs.some((doc) => text(doc).trim() !== ""),
    tags: new Set(docs.flatMap((doc) => (doc.tags ?? []).map((tag) => tag.tagName.text)))
  }
}

/** What a module file's opening doc comment lacks: a summary, `@since`, `@packageDocumentation`. */
const fileCommentLacks = (file: ts.SourceFile): ReadonlyArray<string> => {
  const range = (ts.getLeadingCommentRanges(file.text, 0) ?? [])[0]
  const text = range === undefined ? "" : file.text.slice(range.pos, range.end)
  if (!text.startsWith("/**")) return ["file comment"]
  const summary = text.replace(/^\/\*\*|\*\/$/g, "").replace(/^\s*\* ?/gm, "").split(/^@/m)[0]!.trim()
  return [
    ...(summary !== "" ? [] : ["file comment summary"]),
    ...(/@since\b/.test(text) ? [] : ["@since in its file comment"]),
    ...(/@packageDocumentation\b/.test(text) ? [] : ["@packageDocumentation in its file comment"])
  ]
}

interface Finding {
  readonly export: string
  readonly missing: ReadonlyArray<string>
}

/** Every public export of every subpath, with what its doc comment lacks. */
const findings = (): { readonly checked: number; readonly missing: ReadonlyArray<Finding> } => {
  const subpaths = entries()
  const sources = program(subpaths.map(([, file]) => file))
  const checker = sources.getTypeChecker()
  const missing: Array<Finding> = []
  let checked = 0
  const walk = (prefix: string, module: ts.Symbol, seen: ReadonlySet<ts.Symbol>) => {
    for (const exported of checker.getExportsOfModule(module)) {
      const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
      const declaration = target.declarations?.[0]
      const name = prefix + exported.name
      checked++
      if (declaration === undefined) {
        missing.push({ export: name, missing: ["declaration"] })
        continue
      }
      if (ts.isSourceFile(declaration)) {
        const lacks = fileCommentLacks(declaration)
        if (lacks.length > 0) missing.push({ export: name, missing: lacks })
        if (!seen.has(target)) walk(`${name}.`, target, new Set([...seen, target]))
        continue
      }
      const external = declaration.getSourceFile().fileName.includes("/node_modules/")
      const local = external ? exported.declarations?.[0] : undefined
      const doc = local !== undefined
        ? statementDoc(local)
        : {
          summary: ts.displayPartsToString(target.getDocumentationComment(checker)).trim() !== "",
          tags: new Set(target.getJsDocTags(checker).map((tag) => tag.name))
        }
      const lacks = [
        ...(doc.summary ? [] : ["summary"]),
        ...(doc.tags.has("since") ? [] : ["@since"]),
        ...(doc.tags.has("category") ? [] : ["@category"])
      ]
      if (lacks.length > 0) missing.push({ export: name, missing: lacks })
    }
  }
  for (const [subpath, file] of subpaths) {
    const sourceFile = sources.getSourceFile(file)
    const module = sourceFile === undefined ? undefined : checker.getSymbolAtLocation(sourceFile)
    if (module === undefined) {
      missing.push({ export: `${subpath}: (${relative(ROOT, file)} is no module)`, missing: ["exports"] })
      continue
    }
    walk(`${subpath}: `, module, new Set([module]))
  }
  return { checked, missing }
}

describe("API reference", () => {
  it("every export has a doc comment", { timeout: 120_000 }, () => {
    const { checked, missing } = findings()
    assert.isAbove(checked, 100, "the walk found the exports")
    const report = missing.map((finding) => `${finding.export} (no ${finding.missing.join(", no ")})`)
    assert.deepStrictEqual(report, [], `${missing.length} of ${checked} exports lack a doc comment`)
  })
})
