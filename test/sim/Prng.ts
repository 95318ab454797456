/** The simulation's seeded PRNG ships with the package (src/sim/Prng.ts); the generators here draw from it. */
export { Prng } from "../../src/sim/Prng.ts"
