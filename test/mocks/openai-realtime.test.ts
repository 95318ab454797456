/**
 * Protocol conformance of the OpenAI Realtime GA mock, driven by a raw `ws` client
 * (docs/protocols.md section 1): session start, text / audio / function-call turns, items and
 * previous_item_id, truncation, session.update effects, server VAD and interruption.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { PCM16_24K, synthesize, toBase64 } from "./shared/audio.ts"
import * as OpenAIRealtimeMock from "./openai-realtime/index.ts"
import { Plan } from "./openai-realtime/index.ts"
import { connect, type Msg, squash, typesOf } from "./rawClient.ts"

const open = (mock: OpenAIRealtimeMock.OpenAIRealtimeMock, options?: Parameters<typeof connect>[1]) =>
  Effect.gen(function*() {
    const client = yield* connect(mock.url, options)
    const created = yield* client.waitFor("session.created")
    return { client, created: created! }
  })

const userText = (text: string, extra: Record<string, unknown> = {}) => ({
  type: "conversation.item.create",
  ...extra,
  item: { type: "message", role: "user", content: [{ type: "input_text", text }], ...(extra.item as object | undefined) }
})

const textSession = { type: "session.update", session: { type: "realtime", output_modalities: ["text"] } }
const noVad = { type: "session.update", session: { type: "realtime", audio: { input: { turn_detection: null } } } }

describe("OpenAI Realtime mock: protocol", () => {
  it.live("session.created is the first event, with GA defaults and realistic ids", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ sendConversationCreated: true })
      const client = yield* connect(mock.urlFor("gpt-realtime-2025-08-28"))
      const [first, second] = yield* client.until("conversation.created")
      expect(first!.type).toBe("session.created")
      expect(first!.event_id).toMatch(/^event_[0-9A-Za-z]{21}$/)
      const s = first!.session
      expect(s).toMatchObject({
        type: "realtime",
        object: "realtime.session",
        model: "gpt-realtime-2025-08-28",
        output_modalities: ["audio"],
        tools: [],
        tool_choice: "auto",
        max_output_tokens: "inf",
        tracing: null,
        audio: {
          input: { format: { type: "audio/pcm", rate: 24000 }, turn_detection: { type: "server_vad", silence_duration_ms: 200 } },
          output: { format: { type: "audio/pcm", rate: 24000 }, voice: "marin", speed: 1 }
        }
      })
      expect(s.id).toMatch(/^sess_/)
      expect(second!.conversation).toMatchObject({ object: "realtime.conversation" })
      expect(second!.conversation.id).toMatch(/^conv_/)
      expect(mock.connectionCount()).toBe(1)
    }))

  it.live("text turn: exact GA event order, ids and usage", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ script: [Plan.say("Hello there, friend.")] })
      const { client } = yield* open(mock)
      yield* client.send(textSession)
      yield* client.until("session.updated")
      yield* client.send(userText("hi"))
      const [added, done] = yield* client.until("conversation.item.done")
      expect(added).toMatchObject({ type: "conversation.item.added", previous_item_id: null, item: { type: "message", role: "user" } })
      expect(done!.item.id).toBe(added!.item.id)
      yield* client.send({ type: "response.create" })
      const events = yield* client.until("response.done")
      expect(squash(typesOf(events))).toEqual([
        "response.created",
        "response.output_item.added",
        "conversation.item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "conversation.item.done",
        "response.done"
      ])
      const created = events[0]!.response
      expect(created).toMatchObject({ object: "realtime.response", status: "in_progress", output: [], usage: null })
      expect(created.id).toMatch(/^resp_/)
      const item = events[1]!.item
      expect(item).toMatchObject({ type: "message", role: "assistant", status: "in_progress", content: [] })
      expect(item.id).toMatch(/^item_/)
      expect(events[2]!.previous_item_id).toBe(added!.item.id)
      for (const e of events.slice(1, -1)) {
        if (e.type.startsWith("response.")) expect(e.response_id).toBe(created.id)
        if (e.type.startsWith("response.output_text") || e.type.startsWith("response.content_part")) {
          expect(e).toMatchObject({ item_id: item.id, output_index: 0, content_index: 0 })
        }
      }
      const deltas = events.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta).join("")
      expect(deltas).toBe("Hello there, friend.")
      expect(events.find((e) => e.type === "response.output_text.done")!.text).toBe("Hello there, friend.")
      const done2 = events.at(-1)!.response
      expect(done2).toMatchObject({ id: created.id, status: "completed", status_details: null })
      expect(done2.output[0]).toMatchObject({ status: "completed", content: [{ type: "output_text", text: "Hello there, friend." }] })
      expect(done2.usage).toMatchObject({ input_token_details: { cached_tokens: 0 }, output_token_details: { audio_tokens: 0 } })
      expect(done2.usage.total_tokens).toBe(done2.usage.input_tokens + done2.usage.output_tokens)
      const limits = yield* client.waitFor("rate_limits.updated")
      expect(limits.rate_limits.map((r: Msg) => r.name)).toEqual(["requests", "tokens"])
    }))

  it.live("audio turn: interleaved transcript and PCM16 24 kHz audio deltas", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ script: [Plan.say("one two three", { audioMs: 500, chunkMs: 100 })] })
      const { client } = yield* open(mock)
      yield* client.send({ type: "response.create" })
      const events = yield* client.until("response.done")
      const types = typesOf(events)
      expect(types.slice(0, 4)).toEqual([
        "response.created",
        "response.output_item.added",
        "conversation.item.added",
        "response.content_part.added"
      ])
      expect(types.slice(-6)).toEqual([
        "response.output_audio.done",
        "response.output_audio_transcript.done",
        "response.content_part.done",
        "response.output_item.done",
        "conversation.item.done",
        "response.done"
      ])
      expect(types.slice(4, -6)).toEqual([
        "response.output_audio_transcript.delta",
        "response.output_audio.delta",
        "response.output_audio_transcript.delta",
        "response.output_audio.delta",
        "response.output_audio_transcript.delta",
        "response.output_audio.delta",
        "response.output_audio.delta",
        "response.output_audio.delta"
      ])
      expect(events[0]!.response).toMatchObject({ output_modalities: ["audio"], audio: { output: { format: { type: "audio/pcm", rate: 24000 }, voice: "marin" } } })
      expect(events[3]!.part).toEqual({ type: "audio", transcript: "" })
      const bytes = events
        .filter((e) => e.type === "response.output_audio.delta")
        .reduce((n, e) => n + Buffer.from(e.delta, "base64").byteLength, 0)
      expect(bytes).toBe(500 * 48) // 24 kHz * 2 bytes
      expect(events.find((e) => e.type === "response.output_audio_transcript.done")!.transcript).toBe("one two three")
      const done = events.at(-1)!.response
      expect(done.output[0].content).toEqual([{ type: "output_audio", transcript: "one two three" }])
      expect(done.usage.output_token_details.audio_tokens).toBeGreaterThan(0)
      expect(JSON.stringify(done)).not.toContain("delta") // response.done carries no audio bytes
    }))

  it.live("function call round trip: call, function_call_output item, response.create, answer", () =>
    Effect.gen(function*() {
      const seen: Array<OpenAIRealtimeMock.ScriptContext> = []
      const mock = yield* OpenAIRealtimeMock.make({
        rateLimits: "none",
        script: (ctx) => {
          seen.push(ctx)
          return ctx.responseNumber === 0
            ? Plan.call("get_weather", { city: "Paris" }, { callId: "call_weather0000001" })
            : OpenAIRealtimeMock.echoScript(ctx)
        }
      })
      const { client } = yield* open(mock)
      const tools = [{ type: "function", name: "get_weather", description: "weather", parameters: { type: "object" } }]
      yield* client.send({ type: "session.update", session: { type: "realtime", output_modalities: ["text"], tools, tool_choice: "required" } })
      yield* client.until("session.updated")
      yield* client.send({ type: "response.create" })
      const events = yield* client.until("response.done")
      expect(squash(typesOf(events))).toEqual([
        "response.created",
        "response.output_item.added",
        "conversation.item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "conversation.item.done",
        "response.done"
      ])
      expect(events[1]!.item).toMatchObject({ type: "function_call", status: "in_progress", name: "get_weather", call_id: "call_weather0000001", arguments: "" })
      const deltas = events.filter((e) => e.type === "response.function_call_arguments.delta")
      expect(deltas.length).toBe(3)
      expect(deltas[0]).toMatchObject({ call_id: "call_weather0000001", output_index: 0 })
      expect(deltas.map((d) => d.delta).join("")).toBe("{\"city\":\"Paris\"}")
      expect(events.find((e) => e.type === "response.function_call_arguments.done")).toMatchObject({ name: "get_weather", call_id: "call_weather0000001", arguments: "{\"city\":\"Paris\"}" })
      const fnItem = events.find((e) => e.type === "response.output_item.done")!.item
      expect(fnItem).toMatchObject({ type: "function_call", status: "completed" })
      expect(seen[0]!.toolChoice).toBe("required")
      expect(seen[0]!.tools.map((t) => t.name)).toEqual(["get_weather"])

      yield* client.send({
        type: "conversation.item.create",
        item: { type: "function_call_output", call_id: "call_weather0000001", output: "{\"temp\":21}" }
      })
      const [outAdded] = yield* client.until("conversation.item.done")
      expect(outAdded).toMatchObject({
        type: "conversation.item.added",
        previous_item_id: fnItem.id,
        item: { type: "function_call_output", call_id: "call_weather0000001", output: "{\"temp\":21}" }
      })
      // No automatic reply after a tool output: the client must send response.create.
      yield* Effect.sleep("100 millis")
      expect(client.frames.at(-1)!.msg!.type).toBe("conversation.item.done")
      yield* client.send({ type: "response.create" })
      const answer = yield* client.until("response.done")
      expect(answer.at(-1)!.response.output[0].content[0].text).toBe("Tool result: {\"temp\":21}")
      expect(seen[1]!.lastItem).toMatchObject({ type: "function_call_output" })

      // A function_call_output for an unknown call is refused, with the client's event_id.
      yield* client.send({ type: "conversation.item.create", event_id: "evt_bad", item: { type: "function_call_output", call_id: "call_nope", output: "x" } })
      const err = yield* client.waitFor("error")
      expect(err.error).toMatchObject({ type: "invalid_request_error", event_id: "evt_bad", param: "item.call_id" })
    }))

  it.live("items: previous_item_id semantics (append, root, after), delete, retrieve, errors", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make()
      const { client } = yield* open(mock)
      const add = (text: string, extra: Record<string, unknown> = {}) =>
        client.send(userText(text, extra)).pipe(Effect.andThen(client.until((m) => m.type === "conversation.item.done" || m.type === "error")))
      const a = (yield* add("a", { item: { id: "item_a" } }))[0]!
      expect(a).toMatchObject({ previous_item_id: null, item: { id: "item_a" } })
      const b = (yield* add("b", { item: { id: "item_b" } }))[0]!
      expect(b.previous_item_id).toBe("item_a")
      const c = (yield* add("c", { item: { id: "item_c" }, previous_item_id: "root" }))[0]!
      expect(c.previous_item_id).toBe(null)
      const d = (yield* add("d", { item: { id: "item_d" }, previous_item_id: "item_a" }))[0]!
      expect(d.previous_item_id).toBe("item_a")
      const bad = (yield* add("e", { event_id: "evt_prev", item: { id: "item_e" }, previous_item_id: "item_missing" }))[0]!
      expect(bad.error).toMatchObject({ event_id: "evt_prev", param: "previous_item_id" })
      const dup = (yield* add("a2", { event_id: "evt_dup", item: { id: "item_a" } }))[0]!
      expect(dup.type).toBe("error")
      const conn = (yield* mock.awaitConnection(0))
      expect(conn.items().map((i) => i.id)).toEqual(["item_c", "item_a", "item_d", "item_b"])

      yield* client.send({ type: "conversation.item.delete", item_id: "item_b" })
      expect((yield* client.waitFor("conversation.item.deleted"))).toMatchObject({ item_id: "item_b" })
      yield* client.send({ type: "conversation.item.delete", event_id: "evt_del", item_id: "item_b" })
      const delErr = yield* client.waitFor("error")
      expect(delErr.error).toMatchObject({ event_id: "evt_del", message: "Item with item_id not found: item_b" })
      yield* client.send({ type: "conversation.item.retrieve", item_id: "item_d" })
      expect((yield* client.waitFor("conversation.item.retrieved")).item).toMatchObject({ id: "item_d", content: [{ type: "input_text", text: "d" }] })
      // GA refuses beta content types and assistant audio.
      yield* client.send({ type: "conversation.item.create", item: { type: "message", role: "assistant", content: [{ type: "output_audio", audio: "" }] } })
      expect((yield* client.waitFor("error")).error.message).toBe("It cannot populate assistant audio messages.")
      expect(conn.items().map((i) => i.id)).toEqual(["item_c", "item_a", "item_d"])
    }))

  it.live("truncation: assistant audio is cut, its transcript deleted; bad truncates are errors", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ script: [Plan.say("a long answer", { audioMs: 1000 })] })
      const { client } = yield* open(mock)
      yield* client.send({ type: "response.create" })
      const events = yield* client.until("response.done")
      const itemId = events[1]!.item.id
      yield* client.send({ type: "conversation.item.truncate", event_id: "t1", item_id: itemId, content_index: 0, audio_end_ms: 1500 })
      expect((yield* client.waitFor("error")).error).toMatchObject({
        event_id: "t1",
        message: "Audio content of 1000ms is already shorter than 1500ms"
      })
      yield* client.send({ type: "conversation.item.truncate", item_id: itemId, content_index: 0, audio_end_ms: 400 })
      expect((yield* client.waitFor("conversation.item.truncated"))).toMatchObject({ item_id: itemId, content_index: 0, audio_end_ms: 400 })
      yield* client.send({ type: "conversation.item.retrieve", item_id: itemId })
      const part = (yield* client.waitFor("conversation.item.retrieved")).item.content[0]
      expect(part.transcript).toBe("")
      expect(Buffer.from(part.audio, "base64").byteLength).toBe(400 * 48)
      yield* client.send({ type: "conversation.item.truncate", item_id: "item_unknown", content_index: 0, audio_end_ms: 10 })
      expect((yield* client.waitFor("error")).error.code).toBe("item_truncate_invalid_item_id")
      yield* client.send({ type: "conversation.item.truncate", item_id: itemId, content_index: 0, audio_end_ms: 0 })
      expect((yield* client.waitFor("error")).error.param).toBe("audio_end_ms")
    }))

  it.live("session.update changes later behaviour; per-response overrides apply to one response", () =>
    Effect.gen(function*() {
      const seen: Array<OpenAIRealtimeMock.ScriptContext> = []
      const mock = yield* OpenAIRealtimeMock.make({ rateLimits: "none", script: (ctx) => (seen.push(ctx), Plan.say("ok")) })
      const { client } = yield* open(mock)
      yield* client.send({ type: "session.update", session: { type: "realtime", instructions: "Be terse.", output_modalities: ["text"] } })
      const [updated] = yield* client.until("session.updated")
      expect(updated!.session).toMatchObject({ instructions: "Be terse.", output_modalities: ["text"], audio: { output: { voice: "marin" } } })
      expect(updated!.event_id).not.toBe(undefined)
      yield* client.send({ type: "response.create" })
      expect(typesOf(yield* client.until("response.done"))).toContain("response.output_text.delta")
      expect(seen[0]!.instructions).toBe("Be terse.")

      yield* client.send({
        type: "response.create",
        response: { instructions: "Greet.", tool_choice: "none", conversation: "none", metadata: { client_event_id: "r2" }, output_modalities: ["audio"] }
      })
      const oob = yield* client.until("response.done")
      expect(oob[0]!.response).toMatchObject({ conversation_id: null, metadata: { client_event_id: "r2" } })
      expect(oob.at(-1)!.response.metadata).toEqual({ client_event_id: "r2" })
      expect(typesOf(oob)).not.toContain("conversation.item.added")
      expect(typesOf(oob)).toContain("response.output_audio.delta")
      expect(seen[1]).toMatchObject({ instructions: "Greet.", toolChoice: "none", conversationMode: "none" })
      const conn = yield* mock.awaitConnection(0)
      expect(conn.items().length).toBe(1) // only the first (in-band) answer

      yield* client.send({ type: "response.create" })
      yield* client.until("response.done")
      expect(seen[2]!.instructions).toBe("Be terse.") // override did not stick
    }))

  it.live("session.update refusals: missing session.type, beta names, voice after audio; the whole update is rejected", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ script: [Plan.say("hi", { audioMs: 200 })] })
      const { client } = yield* open(mock)
      const conn = yield* mock.awaitConnection(0)
      yield* client.send({ type: "session.update", event_id: "u1", session: { instructions: "x" } })
      expect((yield* client.waitFor("error")).error).toEqual({
        type: "invalid_request_error",
        code: "missing_required_parameter",
        message: "Missing required parameter: 'session.type'.",
        param: "session.type",
        event_id: "u1"
      })
      yield* client.send({ type: "session.update", session: { type: "realtime", modalities: ["text"], instructions: "y" } })
      expect((yield* client.waitFor("error")).error).toMatchObject({ code: "unknown_parameter", param: "session.modalities" })
      expect(conn.session().instructions).not.toBe("y")
      // voice may change before any audio...
      yield* client.send({ type: "session.update", session: { type: "realtime", audio: { output: { voice: "cedar" } } } })
      expect((yield* client.waitFor("session.updated")).session.audio.output.voice).toBe("cedar")
      yield* client.send({ type: "response.create" })
      yield* client.until("response.done")
      // ...but not after, and then instructions in the same update are not applied either.
      yield* client.send({ type: "session.update", event_id: "u4", session: { type: "realtime", instructions: "z", audio: { output: { voice: "echo" } } } })
      expect((yield* client.waitFor("error")).error).toMatchObject({ code: "cannot_update_voice", event_id: "u4" })
      expect(conn.session().instructions).not.toBe("z")
      expect(conn.session().audio.output.voice).toBe("cedar")
    }))

  it.live("tool_choice is none, auto, required or an object: any other string is refused, in session.update and response.create", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make()
      const { client } = yield* open(mock)
      const conn = yield* mock.awaitConnection(0)
      yield* client.send({ type: "session.update", event_id: "u1", session: { type: "realtime", tool_choice: "get_time" } })
      expect((yield* client.waitFor("error")).error).toMatchObject({
        code: "invalid_value",
        param: "session.tool_choice",
        message: "Invalid value: 'get_time'. Supported values are: 'none', 'auto', 'required'.",
        event_id: "u1"
      })
      expect(conn.session().tool_choice).toBe("auto")
      yield* client.send({ type: "response.create", event_id: "r1", response: { tool_choice: "whatever" } })
      expect((yield* client.waitFor("error")).error).toMatchObject({ code: "invalid_value", param: "response.tool_choice", event_id: "r1" })
      for (const choice of ["none", "required", { type: "function", name: "get_time" }] as const) {
        yield* client.send({ type: "session.update", session: { type: "realtime", tool_choice: choice } })
        expect((yield* client.waitFor("session.updated")).session.tool_choice).toEqual(choice)
      }
    }))

  it.live("server VAD: appended speech then silence gives speech_started/stopped, committed, user item, transcription, auto-response", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ transcribe: () => "what is the weather" })
      const { client } = yield* open(mock)
      yield* client.send({
        type: "session.update",
        session: { type: "realtime", output_modalities: ["text"], audio: { input: { transcription: { model: "gpt-4o-mini-transcribe" } } } }
      })
      yield* client.until("session.updated")
      for (let i = 0; i < 5; i++) yield* client.send({ type: "input_audio_buffer.append", audio: toBase64(synthesize(PCM16_24K, 100)) })
      const started = yield* client.waitFor("input_audio_buffer.speech_started")
      expect(started.audio_start_ms).toBe(0)
      for (let i = 0; i < 4; i++) {
        yield* client.send({ type: "input_audio_buffer.append", audio: toBase64(synthesize(PCM16_24K, 100, { kind: "silence" })) })
      }
      const events = yield* client.until("response.done")
      expect(squash(typesOf(events)).slice(0, 8)).toEqual([
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.completed",
        "response.created",
        "response.output_item.added"
      ])
      const itemId = started.item_id
      expect(events[0]).toMatchObject({ item_id: itemId, audio_end_ms: 700 })
      expect(events[1]).toMatchObject({ item_id: itemId, previous_item_id: null })
      expect(events[2]!.item).toMatchObject({ id: itemId, role: "user", content: [{ type: "input_audio", transcript: null }] })
      expect(events.find((e) => e.type === "conversation.item.input_audio_transcription.completed")).toMatchObject({
        item_id: itemId,
        content_index: 0,
        transcript: "what is the weather"
      })
      expect(events.at(-1)!.response.output[0].content[0].text).toBe("You said: what is the weather")
    }))

  it.live("transcriptOrder: the input transcript of an answered turn comes right after response.created, or after response.done", () =>
    Effect.gen(function*() {
      for (const [order, after] of [["afterResponseCreated", "response.created"], ["afterResponseDone", "response.done"]] as const) {
        const mock = yield* OpenAIRealtimeMock.make({ transcribe: () => "what is the weather", transcriptOrder: order })
        const { client } = yield* open(mock)
        yield* client.send({
          type: "session.update",
          session: { type: "realtime", output_modalities: ["text"], audio: { input: { transcription: { model: "gpt-4o-mini-transcribe" } } } }
        })
        yield* client.until("session.updated")
        const conn = yield* mock.awaitConnection(0)
        yield* conn.perform({ type: "userSpeaks", durationMs: 600 })
        const events = yield* client.until("conversation.item.input_audio_transcription.completed")
        const types = squash(typesOf(events))
        expect(types.indexOf("conversation.item.input_audio_transcription.delta"), order).toBe(types.indexOf(after) + 1)
        expect(types.filter((t) => t.startsWith("response.")).at(-1), order).toBe(after)
        expect(events.at(-1)).toMatchObject({ transcript: "what is the weather", item_id: events.find((e) => e.type === "conversation.item.done")!.item.id })
      }
    }))

  it.live("manual turn (turn_detection null): commit acks with committed + item, never a response; short commits fail; clear", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make()
      const { client } = yield* open(mock)
      yield* client.send(noVad)
      yield* client.until("session.updated")
      yield* client.send({ type: "input_audio_buffer.append", audio: toBase64(synthesize(PCM16_24K, 50)) })
      yield* client.send({ type: "input_audio_buffer.commit", event_id: "c1" })
      expect((yield* client.waitFor("error")).error).toMatchObject({ code: "input_audio_buffer_commit_empty", event_id: "c1" })
      yield* client.send({ type: "input_audio_buffer.append", audio: toBase64(synthesize(PCM16_24K, 300)) })
      yield* client.send({ type: "input_audio_buffer.commit" })
      const events = yield* client.until("conversation.item.done")
      expect(typesOf(events)).toEqual(["input_audio_buffer.committed", "conversation.item.added", "conversation.item.done"])
      yield* Effect.sleep("100 millis")
      expect(client.frames.at(-1)!.msg!.type).toBe("conversation.item.done")
      yield* client.send({ type: "input_audio_buffer.append", audio: toBase64(synthesize(PCM16_24K, 300)) })
      yield* client.send({ type: "input_audio_buffer.clear" })
      yield* client.until("input_audio_buffer.cleared")
      expect((yield* mock.awaitConnection(0)).inputBufferedMs()).toBe(0)
    }))

  it.live("interruption: the user speaks during an audio response; it ends cancelled with reason turn_detected", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        rateLimits: "none",
        deltaIntervalMs: 20,
        script: (ctx) => (ctx.responseNumber === 0 ? Plan.say("a very long story indeed", { audioMs: 3000 }) : Plan.say("sure"))
      })
      const { client } = yield* open(mock)
      yield* client.send({ type: "response.create" })
      yield* client.until("response.output_audio.delta")
      yield* (yield* mock.awaitConnection(0)).userSpeaks({ transcript: "stop" })
      const events = yield* client.until("response.done")
      const types = typesOf(events)
      expect(types.indexOf("input_audio_buffer.speech_started")).toBeLessThan(types.indexOf("response.output_audio.done"))
      expect(squash(types.slice(types.indexOf("response.output_audio.done")))).toEqual([
        "response.output_audio.done",
        "response.output_audio_transcript.done",
        "response.content_part.done",
        "response.output_item.done",
        "conversation.item.done",
        "response.done"
      ])
      const done = events.at(-1)!.response
      expect(done).toMatchObject({ status: "cancelled", status_details: { type: "cancelled", reason: "turn_detected" } })
      expect(done.output[0].status).toBe("incomplete")
      // then the user's turn gets the automatic response (server_vad create_response)
      const next = yield* client.until("response.done")
      expect(next.at(-1)!.response.status).toBe("completed")
    }))

  it.live("response.cancel: cancelled response, then response_cancel_not_active; one writer per conversation", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({ deltaIntervalMs: 20, script: () => Plan.say("a b c d e f g h i j k l", { audioMs: 2000 }) })
      const { client } = yield* open(mock)
      yield* client.send({ type: "response.create" })
      const created = yield* client.waitFor("response.created")
      yield* client.send({ type: "response.create", event_id: "second" })
      const busy = yield* client.waitFor("error")
      expect(busy.error).toMatchObject({
        code: "conversation_already_has_active_response",
        event_id: "second",
        message: `Conversation already has an active response in progress: ${created.response.id}. Wait until the response is finished before creating a new one.`
      })
      yield* client.send({ type: "response.cancel" })
      const events = yield* client.until("response.done")
      expect(events.at(-1)!.response).toMatchObject({ status: "cancelled", status_details: { reason: "client_cancelled" } })
      yield* client.send({ type: "response.cancel", event_id: "late" })
      expect((yield* client.waitFor("error")).error).toMatchObject({
        code: "response_cancel_not_active",
        message: "Cancellation failed: no active response found",
        event_id: "late"
      })
    }))

  it.live("plans: several output items, incomplete and failed statuses, refusal", () =>
    Effect.gen(function*() {
      const mock = yield* OpenAIRealtimeMock.make({
        script: [
          Plan.of([Plan.message("Checking."), Plan.functionCall("a", {}), Plan.functionCall("b", "{}")]),
          Plan.say("cut", { status: "incomplete", reason: "max_output_tokens" }),
          Plan.fail("inference_rate_limit_exceeded"),
          Plan.refuse({ code: "rate_limit_exceeded", message: "Slow down.", type: "rate_limit_error" })
        ]
      })
      const { client } = yield* open(mock)
      yield* client.send(textSession)
      yield* client.until("session.updated")
      yield* client.send({ type: "response.create" })
      const multi = (yield* client.until("response.done")).at(-1)!.response
      expect(multi.output.map((o: Msg) => o.type)).toEqual(["message", "function_call", "function_call"])
      yield* client.send({ type: "response.create" })
      const inc = (yield* client.until("response.done")).at(-1)!.response
      expect(inc).toMatchObject({ status: "incomplete", status_details: { type: "incomplete", reason: "max_output_tokens" } })
      expect(inc.output[0].status).toBe("incomplete")
      yield* client.send({ type: "response.create" })
      const failed = (yield* client.until("response.done")).at(-1)!.response
      expect(failed.status_details).toEqual({ type: "failed", error: { type: "invalid_request_error", code: "inference_rate_limit_exceeded" } })
      yield* client.send({ type: "response.create", event_id: "r4" })
      const refused = yield* client.waitFor((m) => m.type === "error" || m.type === "response.created")
      expect(refused.error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded", event_id: "r4" })
    }))
})
