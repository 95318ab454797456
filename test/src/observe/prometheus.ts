/**
 * Reads Prometheus text (what `PrometheusMetrics.format` and `/metrics` serve) into samples, so
 * tests can look a metric up by name and labels.
 */
export interface Sample {
  readonly name: string
  readonly labels: Record<string, string>
  readonly value: number
}

export const parse = (text: string): ReadonlyArray<Sample> =>
  text.split("\n").flatMap((line) => {
    if (line.startsWith("#") || line.trim() === "") return []
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line)
    if (!match) throw new Error(`not a Prometheus sample: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, key, value] of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!
    return [{ name: match[1]!, labels, value: Number(match[3]) }]
  })

/** The value of the one sample named `name` whose labels include `labels` (undefined when none). */
export const value = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}): number | undefined => {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value
}
