/**
 * Deepgram's streaming speech to text (`/v1/listen` over WebSocket) as an `Stt` layer.
 *
 * @module @baton-voice/baton/deepgram
 */
export * as DeepgramStt from "./DeepgramStt.ts"
