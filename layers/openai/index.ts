/**
 * OpenAI and OpenAI-compatible servers: the chat completions model (`OpenAiChat`, also Ollama,
 * vLLM, llama.cpp...), the Realtime speech-to-speech model (`OpenAiRealtime`), and speech to text
 * and text to speech over HTTP (`OpenAiStt`, `OpenAiTts`). Each has `layer(options)` and
 * `layerConfig` (from `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_MODEL`, ...).
 *
 * @module @baton-voice/baton/openai
 */
export { OpenAiChat } from "./OpenAiChat.ts"
export type { Info as OpenAiChatInfo, Options as OpenAiChatOptions, TuningOptions as OpenAiChatTuningOptions } from "./OpenAiChat.ts"
export { OpenAiRealtime } from "./OpenAiRealtime.ts"
export type { Info as OpenAiRealtimeInfo, Options as OpenAiRealtimeOptions, TuningOptions as OpenAiRealtimeTuningOptions, TurnDetection } from "./OpenAiRealtime.ts"
export type { Liveness } from "./RealtimeSocket.ts"
export * as OpenAiStt from "./OpenAiStt.ts"
export * as OpenAiTts from "./OpenAiTts.ts"
