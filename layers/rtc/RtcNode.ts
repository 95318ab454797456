/**
 * `@livekit/rtc-node` as a scoped resource. Its native client keeps the process alive until
 * `dispose()` runs, and that call is global, so one Scope owns it: every part that uses rtc-node
 * (the resampler, LiveKit rooms) takes it from this service, and closing the Layer disposes it
 * once, after all of them. rtc-node is an optional peer of the package: without it the Layer
 * fails with `MissingPeer`, whose message is the `npm install` that fixes it.
 */
import { Context, Data, Effect, Layer } from "effect"

export type RtcNodeModule = typeof import("@livekit/rtc-node")

/** An optional peer the program needs is not installed; `message` says what to install. */
export class MissingPeer extends Data.TaggedError("MissingPeer")<{ readonly message: string }> {}

/** The package Node could not find, when `error` is "cannot find package" (not an error inside it). */
export const missingPackage = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const { code, message } = error as { code?: string; message?: string }
  if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") return undefined
  return String(message).match(/Cannot find (?:package|module) '([^']+)'/)?.[1]
}

/**
 * Imports what needs optional peers; when one is not installed, fails with one line naming it
 * and the `npm install` of `install` (every peer `what` needs). Any other failure while loading
 * stays a defect.
 */
export const importPeer = <A>(load: () => Promise<A>, what: string, install: ReadonlyArray<string>): Effect.Effect<A, MissingPeer> =>
  Effect.tryPromise({ try: load, catch: (error) => error }).pipe(
    Effect.catch((error) => {
      const missing = missingPackage(error)
      return missing === undefined
        ? Effect.die(error)
        : Effect.fail(new MissingPeer({ message: `${what} needs ${missing}, which is not installed: npm install ${install.join(" ")}` }))
    })
  )

/**
 * `@livekit/rtc-node`, loaded once for the application and disposed when its layer closes. Provide
 * `RtcNode.layer` for every part that uses rtc-node (LiveKit rooms, its resampler); it fails with
 * `MissingPeer` when the package is not installed.
 *
 * @since 0.1.0
 * @category services
 */
export class RtcNode extends Context.Service<RtcNode, RtcNodeModule>()("baton/RtcNode") {
  static readonly layer: Layer.Layer<RtcNode, MissingPeer> = Layer.effect(
    RtcNode,
    Effect.acquireRelease(
      importPeer(() => import("@livekit/rtc-node"), "LiveKit audio", ["@livekit/rtc-node"]),
      (rtc) => Effect.promise(() => rtc.dispose())
    )
  )
}
