/**
 * The shape of src/ in numbers: files, lines, the longest files and functions. For the closing
 * notes of restructuring work: `node scripts/shape.ts [dir]` (default: src).
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import ts from "typescript"

const root = process.argv[2] ?? "src"

const files = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

interface Fn {
  readonly where: string
  readonly lines: number
}

const functions: Array<Fn> = []
let total = 0
const sizes: Array<{ readonly file: string; readonly lines: number }> = []
for (const file of files(root)) {
  const text = readFileSync(file, "utf8")
  const lines = text.split("\n").length
  total += lines
  sizes.push({ file: relative(root, file), lines })
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const visit = (node: ts.Node, name: string, outer: { readonly name: string; readonly start: number } | undefined) => {
    let here = name
    if (ts.isVariableDeclaration(node) || ts.isPropertyAssignment(node) || ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) {
      here = node.name?.getText(source) ?? name
    }
    let inner = outer
    if (ts.isArrowFunction(node) || ts.isFunctionExpression(node) || ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line
      // `make = (...) => Effect.gen(function*() {...})` is one function, not two.
      const wrapper = outer !== undefined && outer.name === here && start - outer.start <= 2
      if (!wrapper) functions.push({ where: `${relative(root, file)}:${start + 1} ${here}`, lines: end - start + 1 })
      inner = wrapper ? outer : { name: here, start }
    }
    ts.forEachChild(node, (child) => visit(child, here, inner))
  }
  visit(source, "", undefined)
}
sizes.sort((a, b) => b.lines - a.lines)
// A function's lines include the functions inside it; the list shows the outermost long ones.
functions.sort((a, b) => b.lines - a.lines)
console.log(`${root}: ${sizes.length} files, ${total} lines; files over 400 lines: ${sizes.filter((s) => s.lines > 400).length}; functions over 80 lines: ${functions.filter((f) => f.lines > 80).length}`)
console.log("longest files:", sizes.slice(0, 5).map((s) => `${s.file} ${s.lines}`).join(", "))
console.log("longest functions:")
for (const f of functions.slice(0, 8)) console.log(`  ${f.lines} ${f.where}`)
