/**
 * Cartesia's streaming text to speech (`/tts/websocket`, contexts multiplexed on one socket) as a `Tts` layer.
 *
 * @module @baton-voice/baton/cartesia
 */
export * as CartesiaTts from "./CartesiaTts.ts"
