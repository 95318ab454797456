/**
 * LiveKit: a worker that takes jobs from a LiveKit server's agent dispatch and runs each as a
 * session in its room, thousands per process (`Worker.make`, `baton worker`), the `Room` service
 * with its rtc-node layer (`RtcRoom.layer`) and an offline loopback (`LoopbackRoom`), transfers
 * of a SIP caller (`SipTransfer`), a supervisor's take-over and hand back (`Supervisor`), and the
 * worker protocol's messages (`Protocol`).
 *
 * @module @baton-voice/baton/livekit
 */
export * as Job from "./Job.ts"
export * as LoopbackRoom from "./LoopbackRoom.ts"
export * as Protocol from "./Protocol.ts"
export * as Room from "./Room.ts"
export * as RtcRoom from "./RtcRoom.ts"
export * as SipTransfer from "./SipTransfer.ts"
export * as Supervisor from "./Supervisor.ts"
export * as Worker from "./Worker.ts"
export { WorkerError, WorkerErrorReason } from "./WorkerError.ts"
