/**
 * Google's Gemini Live speech-to-speech model as a `RealtimeModel` layer (`GeminiLive.layer`, `GeminiLive.layerConfig`).
 *
 * @module @baton-voice/baton/google
 */
export { GeminiLive } from "./GeminiLive.ts"
export type { Info as GeminiLiveInfo, Options as GeminiLiveOptions, TuningOptions as GeminiLiveTuningOptions } from "./GeminiLive.ts"
export type { Liveness } from "../openai/RealtimeSocket.ts"
