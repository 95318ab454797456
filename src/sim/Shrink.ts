/**
 * Greedy shrinking of a failing schedule: drop actions, answers, calls, faults and words, and zero
 * delays, keeping each change while the run still breaks the same rule, until no change helps or
 * the budget of runs is spent.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect } from "effect"
import type { Answer, Answers, Schedule } from "./Schedule.ts"
import { size } from "./Schedule.ts"

const without = <A>(list: ReadonlyArray<A>, i: number): Array<A> => [...list.slice(0, i), ...list.slice(i + 1)]
const replaced = <A>(list: ReadonlyArray<A>, i: number, a: A): Array<A> => [...list.slice(0, i), a, ...list.slice(i + 1)]

const answerVariants = (a: Answer): Array<Answer> => {
  const out: Array<Answer> = []
  for (let i = 0; i < a.calls.length; i++) out.push({ ...a, calls: without(a.calls, i) })
  for (let i = 0; i < a.calls.length; i++) {
    const { bad: _, ...call } = a.calls[i]!
    out.push({ ...a, calls: replaced(a.calls, i, { ...call, args: {} }) })
  }
  if (a.text.length > 0) out.push({ ...a, text: [] })
  if (a.delay > 0) out.push({ ...a, delay: 0 })
  if (a.error) out.push({ delay: a.delay, text: a.text, calls: a.calls })
  return out
}

/**
 * Variants of `s` with one part dropped or zeroed, the biggest cuts first (`greedy` runs only
 * those smaller than `s`).
 *
 * @since 0.1.0
 * @category shrinking
 */
export const candidates = (s: Schedule): Array<Schedule> => {
  const out: Array<Schedule> = []
  for (let i = 0; i < s.actions.length; i++) out.push({ ...s, actions: without(s.actions, i) })
  for (const agent of Object.keys(s.faults)) {
    const { [agent]: _, ...rest } = s.faults
    out.push({ ...s, faults: rest })
  }
  for (const [agent, table] of Object.entries(s.answers)) {
    if (table.user.length === 0 && table.other.length === 0) {
      const { [agent]: _, ...rest } = s.answers
      out.push({ ...s, answers: rest })
    }
    for (const trigger of ["user", "other"] as const) {
      const list = table[trigger]
      const set = (next: ReadonlyArray<Answer>) => ({ ...s, answers: { ...s.answers, [agent]: { ...table, [trigger]: next } as Answers } })
      for (let i = 0; i < list.length; i++) out.push(set(without(list, i)))
      for (let i = 0; i < list.length; i++) for (const variant of answerVariants(list[i]!)) out.push(set(replaced(list, i, variant)))
    }
  }
  for (const [agent, tools] of Object.entries(s.faults)) {
    for (const [tool, fault] of Object.entries(tools)) {
      const { [tool]: _, ...rest } = tools
      out.push({ ...s, faults: { ...s.faults, [agent]: rest } })
      if (fault.delay > 0) out.push({ ...s, faults: { ...s.faults, [agent]: { ...tools, [tool]: { ...fault, delay: 0 } } } })
    }
  }
  for (let i = 0; i < s.actions.length; i++) {
    const a = s.actions[i]!
    if (a.after > 0) out.push({ ...s, actions: replaced(s.actions, i, { ...a, after: 0 }) })
  }
  return out
}

/**
 * Greedy shrinking of any failing value: runs the candidates of the current value in turn (only
 * those smaller by `size`, the biggest cuts first as `candidates` yields them) and keeps the
 * first that still `fails`, until none does or `budget` runs are spent. The smallest value found
 * and the runs it took. This loop shrinks schedules here and the repository's generated
 * scenarios (test/sim/Shrink.ts).
 *
 * @since 0.1.0
 * @category shrinking
 */
export const greedy = <S, E, R>(
  initial: S,
  options: {
    readonly candidates: (value: S) => Iterable<S>
    readonly size: (value: S) => number
    readonly fails: (candidate: S) => Effect.Effect<boolean, E, R>
    readonly budget: number
  }
): Effect.Effect<{ readonly value: S; readonly runs: number }, E, R> =>
  Effect.gen(function*() {
    let current = initial
    let runs = 0
    let progress = true
    while (progress && runs < options.budget) {
      progress = false
      const limit = options.size(current)
      for (const candidate of options.candidates(current)) {
        if (runs >= options.budget) break
        // Candidates are made lazily: one no smaller is skipped without a run.
        if (options.size(candidate) >= limit) continue
        runs++
        if (yield* options.fails(candidate)) {
          current = candidate
          progress = true
          break
        }
      }
    }
    return { value: current, runs }
  })

/**
 * The smallest schedule found for which `fails` still holds, and the runs it took.
 *
 * @since 0.1.0
 * @category shrinking
 */
export const shrink = <R>(
  schedule: Schedule,
  fails: (candidate: Schedule) => Effect.Effect<boolean, never, R>,
  budget = 300
): Effect.Effect<{ readonly schedule: Schedule; readonly runs: number }, never, R> =>
  Effect.map(greedy(schedule, { candidates, size, fails, budget }), ({ runs, value }) => ({ schedule: value, runs }))
