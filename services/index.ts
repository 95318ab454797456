/**
 * The services a transport or a provider plugs into: audio frames and their conversions, the
 * user's audio in (`AudioInput`) and the agents' audio out (`AudioOutput`), voice activity
 * (`Vad`), speech to text (`Stt`), text to speech (`Tts`), resampling, WAV and mu-law, the
 * realtime model contract (`RealtimeModel`), where agent text goes (`TextOutput`), a model's
 * part stream (`ModelParts`), who calls a model (`ModelCall`) and models that stand in for one
 * another (`ModelFallback`, `SttFallback`, `TtsFallback`).
 *
 * @module @baton-voice/baton/services
 */
export * as AudioFrame from "./AudioFrame.ts"
export * as AudioInput from "./AudioInput.ts"
export * as AudioOutput from "./AudioOutput.ts"
export * as CallControl from "./CallControl.ts"
export * as ModelCall from "./ModelCall.ts"
export * as ModelFallback from "./ModelFallback.ts"
export * as ModelParts from "./ModelParts.ts"
export * as Mulaw from "./Mulaw.ts"
export * as RealtimeModel from "./RealtimeModel.ts"
export * as Resampler from "./Resampler.ts"
export * as SincResampler from "./SincResampler.ts"
export * as SessionStore from "./SessionStore.ts"
export * as SessionStoreConfig from "./SessionStoreConfig.ts"
export * as SessionStorePostgres from "./SessionStorePostgres.ts"
export * as SessionStoreSqlite from "./SessionStoreSqlite.ts"
export * as Stt from "./Stt.ts"
export * as SttFallback from "./SttFallback.ts"
export * as TextOutput from "./TextOutput.ts"
export * as ToolSchema from "./ToolSchema.ts"
export * as Tts from "./Tts.ts"
export * as TtsFallback from "./TtsFallback.ts"
export * as Vad from "./Vad.ts"
export * as VoiceError from "./VoiceError.ts"
export * as Wav from "./Wav.ts"
export { MissingPeer, PeerLoadError, RtcNode } from "../layers/rtc/RtcNode.ts"
export type { Options as FallbackOptions } from "./Fallback.ts"
