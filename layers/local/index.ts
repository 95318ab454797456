/**
 * The offline voice engines (no key, no network): flite speaks, pocketsphinx listens, WebRTC VAD
 * (default) or Silero VAD finds speech. Each module has `layer(options)` and `layerConfig`
 * providing the `Tts`, `Stt` or `Vad` service of `services/`.
 *
 * @module @baton-voice/baton/local
 */
export * as FliteTts from "./FliteTts.ts"
export * as PocketsphinxStt from "./PocketsphinxStt.ts"
export * as SileroVad from "./SileroVad.ts"
export * as WebRtcVad from "./WebRtcVad.ts"
