/**
 * The Silero model's worker thread (`SileroVad`'s `inference: "worker"`): it loads the model into
 * an onnxruntime session of its own and answers batches ({@link Request}) in the order they come.
 * onnxruntime's `run` is synchronous CPU work; here it does not hold up the event loop that moves
 * the calls' audio, so a batch of a few hundred windows delays no call's frames or replies.
 *
 * The worker's data: `{ modelPath }`. It posts `{ type: "ready" }` once the session is up, or
 * `{ type: "unavailable", message }` and ends.
 */
import { parentPort, workerData } from "node:worker_threads"
import * as SileroSession from "./SileroSession.ts"

/** A batch to run: the `input` and `state` tensors' data (transferred, not copied). */
export interface Request {
  readonly id: number
  readonly input: Float32Array
  readonly state: Float32Array
  readonly batch: number
  readonly width: number
  readonly rate: number
}

/** The worker's messages. */
export type Reply =
  | { readonly type: "ready" }
  | { readonly type: "unavailable"; readonly message: string }
  | { readonly type: "result"; readonly id: number; readonly probabilities: Float32Array; readonly state: Float32Array }
  | { readonly type: "failed"; readonly id: number; readonly message: string }

const port = parentPort
if (port !== null) {
  const post = (reply: Reply, transfer: ReadonlyArray<ArrayBuffer> = []) => port.postMessage(reply, transfer as Array<ArrayBuffer>)
  const { modelPath } = workerData as { readonly modelPath: string }
  try {
    const ort = await import("onnxruntime-node")
    const run = SileroSession.runOn(ort, await SileroSession.create(ort, modelPath))
    port.on("message", (request: Request) => {
      run(request.input, request.state, request.batch, request.width, request.rate).then(
        (out) => {
          // compact copies, theirs to keep: onnxruntime's own buffers are not ours to transfer
          const probabilities = out.probabilities.slice()
          const state = out.state.slice()
          post({ type: "result", id: request.id, probabilities, state }, [probabilities.buffer as ArrayBuffer, state.buffer as ArrayBuffer])
        },
        (e: unknown) => post({ type: "failed", id: request.id, message: (e as Error).message })
      )
    })
    post({ type: "ready" })
  } catch (e) {
    post({ type: "unavailable", message: (e as Error).message })
    port.close()
  }
}
