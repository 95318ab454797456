/**
 * The Silero model in an onnxruntime session, and one batched inference on it: what the event
 * loop (`SileroVad`'s `inference: "event-loop"`) and the worker thread (`SileroThread.ts`) both
 * run. No Effect here: the worker loads only this and onnxruntime.
 */
import type * as Ort from "onnxruntime-node"
import type { Run } from "./SileroBatch.ts"

/** `onnxruntime-node`'s module, loaded by the caller (an optional peer of the package). */
export type OrtModule = typeof import("onnxruntime-node")

/** The model's session: one thread each way, as a batch is one small graph run. */
export const create = (ort: OrtModule, modelPath: string) =>
  ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1, interOpNumThreads: 1 })

/** One batched inference on `session`. */
export const runOn = (ort: OrtModule, session: Ort.InferenceSession): Run => {
  const rateTensors = new Map<number, Ort.Tensor>()
  return async (input, state, batch, width, rate) => {
    let sr = rateTensors.get(rate)
    if (sr === undefined) rateTensors.set(rate, sr = new ort.Tensor("int64", BigInt64Array.of(BigInt(rate)), []))
    const out = await session.run({
      input: new ort.Tensor("float32", input, [batch, width]),
      state: new ort.Tensor("float32", state, [2, batch, 128]),
      sr
    })
    return { probabilities: out["output"]!.data as Float32Array, state: out["stateN"]!.data as Float32Array }
  }
}
