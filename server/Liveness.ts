/**
 * Half-open clients. A browser tab whose laptop slept, or a phone that changed networks, leaves
 * its socket open on this side without a close: nothing arrives, no write fails, and its session
 * would go on talking into the void (and hold a slot of `maxSessions`) until `idleSeconds`. The
 * service pings every client at the WebSocket level, which browsers, `ws` and Twilio answer by
 * themselves; a client that answers nothing within as long again is cut (1006), and its session
 * closes as it does when the client leaves. Any frame from the client counts as an answer, so a
 * phone line's stream (Twilio sends audio every 20 ms) stays however its pongs are handled.
 */
import { WebSocket } from "@effect/platform-node/NodeWS"
import { Duration, Effect, Option } from "effect"
import { type Liveness, watch } from "../layers/shared/Liveness.ts"

/** The class of the server's sockets (ws's `WebSocket` server option): each is pinged from its handshake on. */
export const pingedSockets = (liveness: Liveness): typeof WebSocket =>
  class PingedWebSocket extends WebSocket {
    // Runs as ws's constructor returns (a field keeps ws's constructor signatures); the server
    // sets the socket on this same turn, and the pings start once it is open.
    protected readonly pinged: void = watch(this, liveness)
  }

/** Why a connection that went quiet was closed. */
export const idleReason = (idleSeconds: number): string => `no message for ${idleSeconds} s`

/**
 * One pull of a client's frames, or none when nothing came for `idleSeconds` (0: waits for ever).
 * Every route reads through it, so a client that answers pings but says nothing (a silent phone
 * stream, an idle tab) gives its slot back after `BATON_IDLE_S`.
 */
export const pullWithin = <A, E, R>(pull: Effect.Effect<A, E, R>, idleSeconds: number): Effect.Effect<Option.Option<A>, E, R> =>
  idleSeconds > 0 ? Effect.timeoutOption(pull, Duration.seconds(idleSeconds)) : Effect.map(pull, Option.some)
