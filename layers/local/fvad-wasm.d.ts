/** Types for `@echogarden/fvad-wasm`, which ships none: its default export builds the WASM module. */
declare module "@echogarden/fvad-wasm" {
  const fvad: () => Promise<unknown>
  export default fvad
}
