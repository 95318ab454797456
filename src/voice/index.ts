/**
 * The cascaded voice pipeline (VAD → STT → LLM → TTS) on baton's actors and floor:
 * `VoicePipeline.start`, and its two halves, `VoiceInput` (endpointing, barge-in) and
 * `VoiceOutput` (sentences to speech, played in real time, what was heard).
 *
 * @module @baton-voice/baton/voice
 */
export * as Dtmf from "./Dtmf.ts"
export * as VoiceInput from "./VoiceInput.ts"
export * as VoiceOutput from "./VoiceOutput.ts"
export * as VoicePipeline from "./VoicePipeline.ts"
