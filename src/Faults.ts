/**
 * Deliberately broken variants of the handoff protocol, switched on only by tests that prove
 * the simulation's checker finds real violations. Never set in production code.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Context } from "effect"

/**
 * Protocol faults the simulation injects to check that its checker catches broken rules (each one
 * breaks the rules it names).
 *
 * @since 0.1.0
 * @category models
 */
export interface ProtocolFaults {
  /** Batch outputs enter history in completion order instead of call order (breaks rule 3). */
  readonly outputsInCompletionOrder: boolean
  /**
   * Only the call that finished last decides the batch, as in the peers: a sibling finishing
   * after the handoff cancels it and the outgoing agent replies (breaks rules 2 and 3).
   */
  readonly lastFinisherDecides: boolean
}

/**
 * No fault: the protocol as baton runs it.
 *
 * @since 0.1.0
 * @category constants
 */
export const none: ProtocolFaults = { outputsInCompletionOrder: false, lastFinisherDecides: false }

export const ProtocolFaults = Context.Reference<ProtocolFaults>("baton/ProtocolFaults", { defaultValue: () => none })
