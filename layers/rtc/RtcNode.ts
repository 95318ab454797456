/**
 * `@livekit/rtc-node` as a scoped resource. Its native client keeps the process alive until
 * `dispose()` runs, and that call is global, so one Scope owns it: every part that uses rtc-node
 * (the resampler, LiveKit rooms) takes it from this service, and closing the Layer disposes it
 * once, after all of them.
 */
import { Context, Effect, Layer } from "effect"

export type RtcNodeModule = typeof import("@livekit/rtc-node")

export class RtcNode extends Context.Service<RtcNode, RtcNodeModule>()("baton/RtcNode") {
  static readonly layer: Layer.Layer<RtcNode> = Layer.effect(
    RtcNode,
    Effect.acquireRelease(
      Effect.promise(() => import("@livekit/rtc-node")),
      (rtc) => Effect.promise(() => rtc.dispose())
    )
  )
}
