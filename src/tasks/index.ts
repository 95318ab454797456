/**
 * Ready-made tasks: collect an email address, a phone number, a date, a postal address or digits
 * (by voice or keypad), each an `AgentTask` with a typed, checked result and a confirmation step.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
export * as Collect from "./Collect.ts"
export * as CollectAddress from "./CollectAddress.ts"
export * as CollectDate from "./CollectDate.ts"
export * as CollectDigits from "./CollectDigits.ts"
export * as CollectEmail from "./CollectEmail.ts"
export * as CollectPhone from "./CollectPhone.ts"
