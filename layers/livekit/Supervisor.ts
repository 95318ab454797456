/**
 * A supervisor in a LiveKit room (issue 35): a second person in the caller's room who can take
 * the call over from the agent and hand it back, as an operator does on the service's desk. The
 * supervisor is a `Human` holder of the session's floor: while they hold it no agent speaks or is
 * called, the caller's words (chat, or transcribed audio) are recorded in the history as said to
 * them, and the agent the floor is handed back to knows what was said. In a room the caller hears
 * the supervisor's own microphone; `say` is for text.
 *
 * Commands are data messages on the topic `baton.supervisor`, one JSON object each:
 *
 * - `{"type":"takeOver"}`: the floor passes to the supervisor (the agent stops at once).
 * - `{"type":"handBack","agent":"front","note":"..."}`: the floor back to that agent (default: the
 *   one taken over), the note an instruction for its next reply.
 * - `{"type":"whisper","text":"..."}`: instructions only the agent holding the floor sees.
 * - `{"type":"say","text":"..."}`: the supervisor's words to the caller, as text.
 *
 * Each is answered to its sender on the same topic: `{"type":"result","of",...}` or
 * `{"type":"error","of","message"}`. Only a supervisor is obeyed: a participant whose identity is
 * in `identities`, or whose `baton.role` attribute is `supervisor` (trust the attribute only when
 * the room's tokens do not let participants set their own attributes, `canUpdateOwnMetadata`);
 * anyone else gets an error. A supervisor who leaves while holding the floor hands it back.
 *
 * @since 0.1.0
 * @packageDocumentation
 */
import { Effect, Stream, type Scope } from "effect"
import { type Agent, type AgentSession, Human } from "../../src/index.ts"
import type { SessionEvent } from "../../src/Events.ts"
import type { RoomConnection, RoomData, RoomParticipant } from "./Room.ts"

/**
 * The data topic of a supervisor's commands and their answers.
 *
 * @since 0.1.0
 * @category constants
 */
export const TOPIC = "baton.supervisor"

/**
 * Who may supervise, and to whom the floor may be handed back.
 *
 * @since 0.1.0
 * @category models
 */
export interface SupervisorOptions<R = never> {
  /** Identities obeyed whatever their attributes. */
  readonly identities?: ReadonlyArray<string> | undefined
  /** Obey a participant whose `baton.role` attribute is `supervisor` (default true). */
  readonly byAttribute?: boolean | undefined
  /** The agents the floor may be handed back to, by name (default: the job's entry agent). */
  readonly agents?: ReadonlyArray<Agent.Agent<R>> | undefined
}

/**
 * Whether `participant` is obeyed as a supervisor.
 *
 * @since 0.1.0
 * @category utils
 */
export const isSupervisor = <R>(options: SupervisorOptions<R>, participant: RoomParticipant): boolean =>
  (options.identities ?? []).includes(participant.identity) ||
  ((options.byAttribute ?? true) && participant.attributes?.["baton.role"] === "supervisor")

type Command = { readonly type: string; readonly [k: string]: unknown }

const parse = (payload: string): Command | undefined => {
  try {
    const value = JSON.parse(payload)
    return typeof value === "object" && value !== null && typeof value.type === "string" ? value : undefined
  } catch {
    return undefined
  }
}

const text = (command: Command) => (typeof command["text"] === "string" ? command["text"] : "")

/**
 * Obeys the room's supervisors for `session` until the Scope closes (`entry`: the job's agent,
 * the default to hand back to). Needs a room that carries data (`dataOf`, `sendData`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const serve = <R>(
  conn: RoomConnection,
  session: AgentSession.AgentSession,
  entry: Agent.Agent<R>,
  options: SupervisorOptions<R> = {}
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const dataOf = conn.dataOf
    if (!dataOf) return yield* Effect.logDebug("livekit: this room carries no data: no supervisor")
    // (The room's agents run in its session: what they need, the session has.)
    const agents = (options.agents ?? [entry]).filter((a) => a.task === undefined) as unknown as ReadonlyArray<Agent.Agent>
    const humans = new Map<string, Human.Human>()
    const reply = (to: RoomParticipant, frame: object) => conn.sendData?.(JSON.stringify(frame), { topic: TOPIC, to: [to.identity] }) ?? Effect.void

    /** The agent the floor was taken from, by the last take-over's record. */
    const takenFrom = Effect.map(session.eventLog, (events) => {
      const taken = events.findLast((e): e is Extract<SessionEvent, { type: "agent_handoff" }> => e.type === "agent_handoff" && e.kind === "take_over")
      return agents.find((a) => a.name === taken?.from) ?? agents[0]
    })
    /** One Human per supervisor; leaving while holding the floor hands it back. */
    const humanOf = (participant: RoomParticipant) =>
      Effect.gen(function*() {
        const known = humans.get(participant.identity)
        if (known) return known
        const human = yield* Human.make({ name: participant.name || participant.identity })
        humans.set(participant.identity, human)
        // The caller's words reach the session's history and events; the queue is not kept.
        yield* Effect.forkScoped(Stream.runDrain(human.heard))
        yield* conn.left(participant).pipe(
          Effect.andThen(Effect.suspend(() =>
            human.holding() !== session.id
              ? Effect.void
              : Effect.flatMap(takenFrom, (agent) => (agent ? Effect.asVoid(session.handBack(agent, { note: `${human.name} left.` })) : Effect.void))
          )),
          Effect.forkScoped
        )
        return human
      })

    const obey = (command: Command, human: Human.Human): Effect.Effect<object> => {
      const failed = (e: { readonly message: string }) => Effect.succeed({ type: "error", of: command.type, message: e.message })
      switch (command.type) {
        case "takeOver":
          return Effect.map(session.takeOver(human, { reason: `${human.name} took over` }), (outcome) => ({ type: "result", of: "takeOver", outcome }))
        case "handBack":
          return Effect.gen(function*() {
            const named = command["agent"]
            const agent = named === undefined ? yield* takenFrom : agents.find((a) => a.name === named)
            if (!agent) return { type: "error", of: "handBack", message: `no agent ${String(named)} (expected ${agents.map((a) => a.name).join(", ")})` }
            const note = typeof command["note"] === "string" && command["note"] !== "" ? command["note"] : undefined
            return { type: "result", of: "handBack", outcome: yield* session.handBack(agent, { note }) }
          })
        case "whisper":
          return session.whisper(text(command)).pipe(Effect.as({ type: "result", of: "whisper" }), Effect.catch(failed))
        case "say":
          return human.say(text(command)).pipe(Effect.as({ type: "result", of: "say" }), Effect.catch(failed))
        default:
          return Effect.succeed({ type: "error", of: command.type, message: `unknown command ${command.type} (expected takeOver, handBack, whisper or say)` })
      }
    }

    const onData = ({ from, payload }: RoomData) =>
      Effect.gen(function*() {
        if (!isSupervisor(options, from)) {
          return yield* reply(from, { type: "error", message: `${from.identity} is not a supervisor of this room` })
        }
        const command = parse(payload)
        if (!command) return yield* reply(from, { type: "error", message: "a supervisor's message is one JSON object with a type (takeOver, handBack, whisper, say)" })
        return yield* reply(from, yield* obey(command, yield* humanOf(from)))
      })
    yield* dataOf(TOPIC).pipe(Stream.runForEach(onData), Effect.forkScoped)
  })
