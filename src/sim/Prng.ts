/**
 * A small seeded PRNG for the simulation (sfc32 seeded through splitmix32). No `Math.random`:
 * a seed always gives the same numbers, on every machine. `fork(label)` derives an independent
 * stream, so adding a decision to one part of the generator does not shift the others.
 */

const splitmix32 = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x9e3779b9) >>> 0
    let z = state
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0
    return (z ^ (z >>> 16)) >>> 0
  }
}

const hashLabel = (label: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193) >>> 0
  return h
}

/**
 * A seeded PRNG: the same seed gives the same numbers; `fork(label)` an independent stream.
 *
 * @since 0.1.0
 * @category constructors
 */
export class Prng {
  private a: number
  private b: number
  private c: number
  private d: number
  readonly seed: number

  constructor(seed: number) {
    this.seed = seed >>> 0
    const init = splitmix32(this.seed)
    this.a = init()
    this.b = init()
    this.c = init()
    this.d = init()
    for (let i = 0; i < 12; i++) this.next()
  }

  /** A uniform 32-bit unsigned integer. */
  nextUint32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0
    this.d = (this.d + 1) >>> 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) >>> 0
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0
    this.c = (this.c + t) >>> 0
    return t
  }

  /** A float in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296
  }

  /** An integer in [min, max] (both included). */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1))
  }

  chance(p: number): boolean {
    return this.next() < p
  }

  pick<A>(items: ReadonlyArray<A>): A {
    if (items.length === 0) throw new Error("Prng.pick: empty list")
    return items[this.int(0, items.length - 1)]!
  }

  /** A shuffled copy. */
  shuffle<A>(items: ReadonlyArray<A>): Array<A> {
    const copy = [...items]
    for (let i = copy.length - 1; i > 0; i--) {
      const j = this.int(0, i)
      const t = copy[i]!
      copy[i] = copy[j]!
      copy[j] = t
    }
    return copy
  }

  /** Picks a value by weight: `[[weight, value], ...]`. */
  weighted<A>(entries: ReadonlyArray<readonly [number, A]>): A {
    const total = entries.reduce((sum, [w]) => sum + w, 0)
    let roll = this.next() * total
    for (const [weight, value] of entries) {
      roll -= weight
      if (roll < 0) return value
    }
    return entries[entries.length - 1]![1]
  }

  /** A delay in ms: often 0, otherwise a multiple of 10 up to `max`, skewed to small values. */
  delay(max: number, zeroChance = 0.3): number {
    if (this.chance(zeroChance)) return 0
    const r = this.next()
    return Math.max(10, Math.round((r * r * max) / 10) * 10)
  }

  /** An independent stream derived from this seed and a label. */
  fork(label: string): Prng {
    return new Prng((this.seed ^ hashLabel(label)) >>> 0)
  }
}
