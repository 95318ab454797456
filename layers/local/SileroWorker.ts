/**
 * Silero's batches run on a worker thread (`SileroThread.ts`), one per Layer: the event loop only
 * posts a batch and takes its answer. The worker is held by the Layer's scope (terminated when it
 * closes), and like the Layer's sockets it keeps the process alive until then.
 */
import { Effect } from "effect"
import { Worker } from "node:worker_threads"
import { VoiceError } from "../../services/VoiceError.ts"
import type { Run } from "./SileroBatch.ts"
import type { Reply, Request } from "./SileroThread.ts"

// Built to `.js` in the package, run as `.ts` from the source.
const entry = new URL(import.meta.url.endsWith(".ts") ? "./SileroThread.ts" : "./SileroThread.js", import.meta.url)

const stop = (worker: Worker) => Effect.promise(() => worker.terminate())

interface Pending {
  readonly resolve: (out: { readonly probabilities: Float32Array; readonly state: Float32Array }) => void
  readonly reject: (error: Error) => void
}

/**
 * A {@link Run} on a worker thread of its own with the model at `modelPath`; fails `Unavailable`
 * with `unavailable(message)` when the worker cannot load it.
 */
export const runOnWorker = (modelPath: string, unavailable: (message: string) => VoiceError) =>
  Effect.acquireRelease(
    Effect.callback<Worker, VoiceError>((resume) => {
      const worker = new Worker(entry, { workerData: { modelPath } })
      const onFirst = (reply: Reply) => {
        worker.off("error", onError)
        if (reply.type === "ready") resume(Effect.succeed(worker))
        else resume(Effect.fail(unavailable(reply.type === "unavailable" ? reply.message : `unexpected ${reply.type}`)))
      }
      const onError = (e: Error) => {
        worker.off("message", onFirst)
        resume(Effect.fail(unavailable(e.message)))
      }
      worker.once("message", onFirst)
      worker.once("error", onError)
      // the interrupted start (a Layer abandoned while loading) leaves no thread behind
      return stop(worker)
    }),
    stop
  ).pipe(Effect.map((worker): Run => {
    const pending = new Map<number, Pending>()
    let next = 0
    let stopped: Error | undefined
    const failAll = (error: Error) => {
      stopped ??= error
      for (const p of pending.values()) p.reject(error)
      pending.clear()
    }
    worker.on("message", (reply: Reply) => {
      if (reply.type !== "result" && reply.type !== "failed") return
      const p = pending.get(reply.id)
      if (p === undefined) return
      pending.delete(reply.id)
      if (reply.type === "result") p.resolve(reply)
      else p.reject(new Error(reply.message))
    })
    worker.on("error", (e) => failAll(e))
    worker.on("exit", (code) => failAll(new Error(`the Silero worker thread stopped (exit code ${code})`)))
    return (input, state, batch, width, rate) =>
      new Promise((resolve, reject) => {
        if (stopped !== undefined) return reject(stopped)
        const id = next++
        pending.set(id, { resolve, reject })
        const request: Request = { id, input, state, batch, width, rate }
        // the batch's arrays are made for this run: moved to the worker, not copied
        worker.postMessage(request, [input.buffer as ArrayBuffer, state.buffer as ArrayBuffer])
      })
  }))
