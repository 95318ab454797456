/**
 * Collects an email address: spoken forms ("jane dot doe at example dot com") are normalized,
 * the address is checked, read back spelled out and confirmed. Result: the address, lower case.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Schema } from "effect"
import type { AgentTask } from "../AgentTask.ts"
import * as Collect from "./Collect.ts"

/**
 * An email address: local part, `@`, a domain with a dot.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Email = Schema.String.check(Schema.isPattern(/^[a-z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-z0-9-]+(\.[a-z0-9-]+)+$/))

/**
 * "jane dot doe at example dot com" -> "jane.doe@example.com".
 *
 * @since 0.1.0
 * @category parsing
 */
export const normalize = (heard: string): string =>
  heard.trim().toLowerCase()
    .replace(/\s+(at)\s+/g, "@")
    .replace(/\s+(dot)\s+/g, ".")
    .replace(/\s+(underscore)\s+/g, "_")
    .replace(/\s+(dash|hyphen)\s+/g, "-")
    .replace(/\s+/g, "")

/**
 * The task (options: a name, instructions of your own).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: { readonly name?: string; readonly instructions?: string } = {}): AgentTask<string> =>
  Collect.make({
    ...options,
    what: "email address",
    field: "email",
    schema: Email,
    parse: normalize,
    readBack: (email) => email,
    hint: "Spell unusual parts back letter by letter."
  })
