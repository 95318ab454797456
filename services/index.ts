/**
 * The services a transport or a provider plugs into: audio frames and their conversions, the
 * user's audio in (`AudioInput`) and the agents' audio out (`AudioOutput`), voice activity
 * (`Vad`), speech to text (`Stt`), text to speech (`Tts`), resampling, WAV and mu-law, the
 * realtime model contract (`RealtimeModel`) and where agent text goes (`TextOutput`).
 */
export * as AudioFrame from "./AudioFrame.ts"
export * as AudioInput from "./AudioInput.ts"
export * as AudioOutput from "./AudioOutput.ts"
export * as Mulaw from "./Mulaw.ts"
export * as RealtimeModel from "./RealtimeModel.ts"
export * as Resampler from "./Resampler.ts"
export * as Stt from "./Stt.ts"
export * as TextOutput from "./TextOutput.ts"
export * as ToolSchema from "./ToolSchema.ts"
export * as Tts from "./Tts.ts"
export * as Vad from "./Vad.ts"
export * as VoiceError from "./VoiceError.ts"
export * as Wav from "./Wav.ts"
export { RtcNode } from "../layers/rtc/RtcNode.ts"
