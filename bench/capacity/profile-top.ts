/**
 * The top frames of a V8 CPU profile (`node --cpu-prof`): self time by function, and total time
 * (self + callees) by function, as percentages of the profile's samples.
 *
 *   node bench/capacity/profile-top.ts <file.cpuprofile> [count] [from-s]
 *
 * `from-s` leaves out the samples of the profile's first seconds (start-up, warm-up).
 */
import { readFileSync } from "node:fs"

interface Node {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<Node>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas?: ReadonlyArray<number>
}

export const topFrames = (profile: Profile, count = 25, fromS = 0) => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const name = (n: Node) => {
    const file = n.callFrame.url.replace(/^file:\/\/\/work\/main\//, "").replace(/^.*node_modules\//, "~/")
    return `${n.callFrame.functionName || "(anonymous)"} ${file}:${n.callFrame.lineNumber + 1}`
  }
  const self = new Map<string, number>()
  const total = new Map<string, number>()
  let at = 0
  const kept: Array<number> = []
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas?.[i] ?? 0
    if (at >= fromS * 1e6) kept.push(id)
  })
  for (const id of kept) {
    const n = byId.get(id)!
    self.set(name(n), (self.get(name(n)) ?? 0) + 1)
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const k = name(byId.get(at)!)
      if (seen.has(k)) continue
      seen.add(k)
      total.set(k, (total.get(k) ?? 0) + 1)
    }
  }
  const all = kept.length
  const top = (m: Map<string, number>) =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, count).map(([k, v]) => `${((100 * v) / all).toFixed(1).padStart(5)}%  ${k}`)
  return { samples: all, self: top(self), total: top(total) }
}

if (import.meta.main) {
  const [file, count, fromS] = process.argv.slice(2)
  if (file === undefined) throw new Error("usage: node bench/capacity/profile-top.ts <file.cpuprofile> [count] [from-s]")
  const { samples, self, total } = topFrames(JSON.parse(readFileSync(file, "utf8")) as Profile, Number(count ?? 25), Number(fromS ?? 0))
  console.log(`${samples} samples\n\nself time:\n${self.join("\n")}\n\ntotal time (self + callees):\n${total.join("\n")}`)
}
