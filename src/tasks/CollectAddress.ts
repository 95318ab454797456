/**
 * Collects a postal address: street (with number), city, postal code and country, each
 * required; read back in one line and confirmed. Result: `{ street, city, postalCode, country }`.
 * The tools take the address as one line, `street; city; postal code; country`.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Schema } from "effect"
import type { AgentTask } from "../AgentTask.ts"
import * as Collect from "./Collect.ts"

const Part = Schema.String.check(Schema.isMinLength(1))

/**
 * A postal address.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Address = Schema.Struct({
  street: Part.check(Schema.isPattern(/\d/)),
  city: Part,
  postalCode: Schema.String.check(Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9 -]{1,9}$/)),
  country: Part
})

/**
 * @since 0.1.0
 * @category models
 */
export type Address = typeof Address.Type

const parse = (heard: string) => {
  const parts = heard.split(";").map((p) => p.trim())
  if (parts.length !== 4) return new Error(`Give the address as "street; city; postal code; country" (got "${heard}"). Ask for what is missing.`)
  const [street, city, postalCode, country] = parts as [string, string, string, string]
  return { street, city, postalCode, country }
}

/**
 * The task.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: { readonly name?: string; readonly instructions?: string } = {}): AgentTask<Address> =>
  Collect.make({
    ...options,
    what: "postal address",
    field: "address",
    schema: Address,
    parse,
    readBack: (a) => `${a.street}, ${a.postalCode} ${a.city}, ${a.country}`,
    hint: "Pass it to the tools as one line: street with number; city; postal code; country."
  })
