/**
 * One child process run to completion, as an Effect that owns it: interrupting the Effect kills
 * the process and waits for it to be gone (so a barge-in that cuts a synthesis leaves no flite
 * behind). The offline engines that run as programs (flite) go through here.
 */
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"

export interface Finished {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  /** The last 2 KB of what it wrote to stderr (for an error message). */
  readonly stderr: string
  /** The first 64 KB of what it wrote to stdout. */
  readonly stdout: string
}

/** Runs `binary args`; fails with `onSpawnError` when it cannot start at all (ENOENT, EACCES). */
export const run = <E>(
  binary: string,
  args: ReadonlyArray<string>,
  onSpawnError: (error: NodeJS.ErrnoException) => E
): Effect.Effect<Finished, E> =>
  Effect.callback<Finished, E>((resume) => {
    const child = ChildProcess.spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] })
    let stderr = ""
    let stdout = ""
    let exited = false
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (s: string) => {
      if (stdout.length < 65536) stdout += s
    })
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (s: string) => {
      stderr = (stderr + s).slice(-2048)
    })
    child.once("error", (e) => {
      exited = true
      resume(Effect.fail(onSpawnError(e)))
    })
    child.once("close", (code, signal) => {
      exited = true
      resume(Effect.succeed({ code, signal, stderr, stdout }))
    })
    return Effect.callback<void>((done) => {
      if (exited || child.exitCode !== null || child.signalCode !== null) return done(Effect.void)
      child.once("exit", () => done(Effect.void))
      child.kill("SIGKILL")
    })
  })
