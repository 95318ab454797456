/**
 * `@livekit/rtc-node` as a scoped resource. Its native client keeps the process alive until
 * `dispose()` runs, and that call is global, so one Scope owns it: every part that uses rtc-node
 * (the resampler, LiveKit rooms) takes it from this service, and closing the Layer disposes it
 * once, after all of them. rtc-node is an optional peer of the package: without it the Layer
 * fails with `MissingPeer`, whose message is the `npm install` that fixes it.
 */
import { Context, Data, Effect, Layer } from "effect"

export type RtcNodeModule = typeof import("@livekit/rtc-node")

/**
 * An optional peer the program needs is not installed; `message` says what to install.
 *
 * @since 0.1.0
 * @category errors
 */
export class MissingPeer extends Data.TaggedError("MissingPeer")<{ readonly message: string }> {}

/**
 * An optional peer is installed but failed to load (a broken install, a native binary for another
 * platform, an error while its module runs); `message` says what and the `npm install` to redo.
 *
 * @since 0.1.0
 * @category errors
 */
export class PeerLoadError extends Data.TaggedError("PeerLoadError")<{ readonly message: string }> {}

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
 * is a `PeerLoadError` with its first line and the same `npm install` (never a defect: the CLI
 * prints it as one line).
 */
export const importPeer = <A>(
  load: () => Promise<A>,
  what: string,
  install: ReadonlyArray<string>
): Effect.Effect<A, MissingPeer | PeerLoadError> =>
  Effect.tryPromise({
    try: load,
    catch: (error): MissingPeer | PeerLoadError => {
      const missing = missingPackage(error)
      return missing === undefined
        ? new PeerLoadError({ message: `${what} could not load: ${firstLine(error)}; reinstall its packages: npm install ${install.join(" ")}` })
        : new MissingPeer({ message: `${what} needs ${missing}, which is not installed: npm install ${install.join(" ")}` })
    }
  })

const firstLine = (error: unknown): string => String(error instanceof Error ? error.message : error).split("\n")[0]!

/**
 * `@livekit/rtc-node`, loaded once for the application and disposed when its layer closes. Provide
 * `RtcNode.layer` for every part that uses rtc-node (LiveKit rooms, its resampler); it fails with
 * `MissingPeer` when the package is not installed.
 *
 * @since 0.1.0
 * @category services
 */
export class RtcNode extends Context.Service<RtcNode, RtcNodeModule>()("baton/RtcNode") {
  static readonly layer: Layer.Layer<RtcNode, MissingPeer | PeerLoadError> = Layer.effect(
    RtcNode,
    Effect.acquireRelease(
      importPeer(() => import("@livekit/rtc-node"), "LiveKit audio", ["@livekit/rtc-node"]),
      // a dispose that fails is logged: the process is ending this Layer either way
      (rtc) =>
        Effect.tryPromise({
          try: () => rtc.dispose(),
          catch: (e) => new PeerLoadError({ message: `@livekit/rtc-node did not dispose cleanly: ${firstLine(e)}` })
        }).pipe(Effect.catch((error) => Effect.logWarning(error.message)))
    )
  )
}
