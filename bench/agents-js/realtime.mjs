// agents-js side of baton's realtime handoff benchmark (bench/realtime.ts, seed 001's table).
//
// Run by `node bench/realtime.ts`, which starts the OpenAI Realtime GA mock in a process of its
// own and passes its base URL here in RT_MOCK_BASE_URL (http://127.0.0.1:<port>/v1). Standalone:
//
//   RT_MOCK_BASE_URL=http://127.0.0.1:<port>/v1 node bench/agents-js/realtime.mjs
//
// The model is `@livekit/agents-plugin-openai` 1.9.0's RealtimeModel (it speaks the GA protocol:
// `session.type: "realtime"`, `output_modalities`, `audio.input/output`), pointed at the mock by
// `baseURL`. The scenario is baton's: a greeter that greets in onEnter, RT_TURNS (10) user turns,
// then "What's the weather like today?", answered by the mock with a call of
// `transfer_to_weather`, whose tool returns `llm.handoff({ agent: weather })`; the weather agent's
// onEnter calls `generateReply({ instructions: INTRO })`.
//
// Variants (as baton's, same order):
//   reuse: both agents use the session's RealtimeModel instance: agents-js 1.9.0 reuses the
//          realtime session (`_detachReusableResources`: same model instance, every changed part
//          mutable mid-session) and reconfigures it with `_updateSession`.
//   fresh: the weather agent gets a second RealtimeModel instance (`new Agent({ llm })`), so the
//          session cannot be reused: the old one is closed and a new WebSocket is opened.
//   full:  the weather agent is built with the greeter's chat context (`chatCtx: this.chatCtx`);
//   none:  with none (an empty context).
//
// Timestamps are `performance.timeOrigin + performance.now()` (the clock bench/realtime.ts and
// the mock use):
//   tTool       first statement of transfer_to_weather's execute()
//   tHandoff    the session's `conversation_item_added` event for the agent_handoff item
//   tFirstAudio the first audio frame given to the session's audio output after tHandoff
//   ops         every frame the plugin writes on a WebSocket (ws `send`, wrapped), for the timeline
//
// Prints exactly one JSON object ({ meta, runs }) on stdout; progress on stderr. Exit code 0, or 1
// on any failure (stdout empty then).
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { createRequire } from 'node:module';

// ---- stdout discipline: everything except the final JSON goes to stderr ----------------------
const writeStdout = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);
console.log = console.error;
console.info = console.error;
console.debug = console.error;
const log = (...a) => console.error('[agents-js realtime]', ...a);

const abs = () => performance.timeOrigin + performance.now();

// ---- client frames: wrap ws's send before the plugin loads (the plugin imports the same ws) ---
const { WebSocket } = await import('ws');
const ops = [];
const socketIds = new WeakMap();
let sockets = 0;
const originalSend = WebSocket.prototype.send;
WebSocket.prototype.send = function send(data, ...rest) {
  let id = socketIds.get(this);
  if (id === undefined) socketIds.set(this, (id = `s${++sockets}`));
  let type = '?';
  if (typeof data === 'string') {
    const m = /"type"\s*:\s*"([^"]+)"/.exec(data);
    if (m) type = m[1];
  }
  ops.push({ at: abs(), conn: id, op: `send ${type}` });
  return originalSend.call(this, data, ...rest);
};

const { initializeLogger, llm, voice } = await import('@livekit/agents');
const openai = await import('@livekit/agents-plugin-openai');
initializeLogger({ pretty: false, level: process.env.RT_LOG_LEVEL || 'silent' });

const envInt = (name, dflt) => {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`env ${name}=${v} is not a non-negative number`);
  return Math.floor(n);
};
const BASE_URL = process.env.RT_MOCK_BASE_URL;
const REPS = Math.max(1, envInt('RT_REPS', 10));
const WARMUP = envInt('RT_WARMUP', 1);
const TURNS = envInt('RT_TURNS', 10);
const STEP_TIMEOUT_MS = envInt('RT_STEP_TIMEOUT_MS', 10_000);

// ---- the scenario: the same texts as bench/realtime.ts --------------------------------------
const GREET = 'greet the user and ask how you can help';
const INTRO = 'introduce yourself as the weather specialist and ask what city';
const WEATHER_QUESTION = "What's the weather like today?";
const greeterInstructions = (tag) =>
  `You are Kelly, a friendly greeter. Keep responses concise. When the user asks about weather, use the transfer_to_weather tool. [${tag}]`;
const weatherInstructions = (tag) =>
  `You are Sunny, a weather specialist. Keep responses concise. Help the user with weather questions. [${tag}]`;

const VARIANTS = [
  { name: 'reuse + context copied', connection: 'reuse', context: 'full' },
  { name: 'reuse + context empty', connection: 'reuse', context: 'none' },
  { name: 'fresh + context copied', connection: 'fresh', context: 'full' },
  { name: 'fresh + context empty', connection: 'fresh', context: 'none' },
];

class BenchFailure extends Error {}
const withTimeout = (promise, ms, what) => {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new BenchFailure(`timeout after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, t]).finally(() => clearTimeout(timer));
};
const until = async (check, what) => {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new BenchFailure(`timeout after ${STEP_TIMEOUT_MS} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
};

/** An audio sink that plays instantly: it records when frames arrive and reports each segment done at flush. */
class RecordingAudioOutput extends voice.AudioOutput {
  constructor() {
    super(24000);
    this.frames = [];
    this.segmentsDone = 0;
    this.open = false;
  }
  async captureFrame(frame) {
    const first = !this._capturing;
    await super.captureFrame(frame);
    this.frames.push(abs());
    if (first) {
      this.open = true;
      this.onPlaybackStarted(Date.now());
    }
  }
  finishSegment(interrupted) {
    if (!this.open) return;
    this.open = false;
    this.segmentsDone++;
    this.onPlaybackFinished({ playbackPosition: 0, interrupted });
  }
  flush() {
    super.flush();
    this.finishSegment(false);
  }
  clearBuffer() {
    this._capturing = false;
    this.finishSegment(true);
  }
}

const pkgVersion = (name) => {
  const require = createRequire(import.meta.url);
  try {
    let dir = require.resolve(name);
    for (let i = 0; i < 8; i++) {
      dir = dir.slice(0, dir.lastIndexOf('/'));
      try {
        const pj = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8'));
        if (pj.name === name) return pj.version;
      } catch {}
    }
  } catch {}
  return null;
};

async function runOnce(variant, rep, warmup) {
  const tag = `agents-js ${variant.connection}/${variant.context} #${rep}${warmup ? 'w' : ''}`;
  const t = { tool: NaN, handoff: NaN, firstAudio: NaN };
  const opsFrom = ops.length;
  const model = new openai.realtime.RealtimeModel({ baseURL: BASE_URL, apiKey: 'sk-mock' });
  const weatherModel =
    variant.connection === 'fresh' ? new openai.realtime.RealtimeModel({ baseURL: BASE_URL, apiKey: 'sk-mock' }) : undefined;

  class WeatherAgent extends voice.Agent {
    constructor(chatCtx) {
      super({
        instructions: weatherInstructions(tag),
        ...(chatCtx ? { chatCtx } : {}),
        ...(weatherModel ? { llm: weatherModel } : {}),
        tools: {
          lookup_weather: llm.tool({ description: 'Weather for a city', execute: async () => 'sunny' }),
        },
      });
    }
    async onEnter() {
      this.session.generateReply({ instructions: INTRO });
    }
  }
  let weather;
  class GreeterAgent extends voice.Agent {
    constructor() {
      super({
        instructions: greeterInstructions(tag),
        tools: {
          transfer_to_weather: llm.tool({
            description: 'Transfer to the weather agent when the user asks about weather.',
            execute: async () => {
              t.tool = abs();
              weather = new WeatherAgent(variant.context === 'full' ? this.chatCtx.copy() : undefined);
              return llm.handoff({ agent: weather });
            },
          }),
        },
      });
    }
    async onEnter() {
      this.session.generateReply({ instructions: GREET });
    }
  }

  const audio = new RecordingAudioOutput();
  const session = new voice.AgentSession({ llm: model, vad: null });
  session.output.audio = audio;
  session.on('conversation_item_added', (ev) => {
    // The first agent_handoff item is the session's start (no old agent): skip it.
    if (ev.item?.type === 'agent_handoff' && ev.item.oldAgentId !== undefined && Number.isNaN(t.handoff)) t.handoff = abs();
  });
  const errors = [];
  session.on('error', (ev) => errors.push(String(ev.error?.message ?? ev.error)));
  try {
    await withTimeout(session.start({ agent: new GreeterAgent() }), STEP_TIMEOUT_MS, `${tag}: start`);
    await until(() => audio.segmentsDone >= 1, `${tag}: the greeting`);
    for (let i = 1; i <= TURNS; i++) {
      const done = audio.segmentsDone;
      await withTimeout(session.run({ userInput: `Turn ${i}: tell me something nice.` }).wait(), STEP_TIMEOUT_MS, `${tag}: turn ${i}`);
      await until(() => audio.segmentsDone > done, `${tag}: reply to turn ${i}`);
    }
    const framesBefore = audio.frames.length;
    const done = audio.segmentsDone;
    await withTimeout(session.run({ userInput: WEATHER_QUESTION }).wait(), STEP_TIMEOUT_MS, `${tag}: the weather question`);
    await until(() => audio.segmentsDone > done && audio.frames.length > framesBefore, `${tag}: the weather agent's first reply`);
    if (Number.isNaN(t.tool) || Number.isNaN(t.handoff)) throw new BenchFailure(`${tag}: no handoff (${JSON.stringify(t)})`);
    t.firstAudio = audio.frames.slice(framesBefore).find((at) => at > t.handoff) ?? NaN;
    if (Number.isNaN(t.firstAudio)) throw new BenchFailure(`${tag}: no audio after the handoff`);
    if (session.currentAgent !== weather) throw new BenchFailure(`${tag}: the weather agent does not hold the session`);
    if (errors.length > 0) throw new BenchFailure(`${tag}: session errors: ${errors.join('; ')}`);
  } finally {
    await withTimeout(session.close(), STEP_TIMEOUT_MS, `${tag}: close`).catch((e) => log(`close failed: ${e.message}`));
  }
  const mine = ops.slice(opsFrom);
  const opened = new Set(mine.map((op) => op.conn)).size;
  const expected = variant.connection === 'reuse' ? 1 : 2;
  if (opened !== expected) throw new BenchFailure(`${tag}: ${opened} connections written to, expected ${expected}`);
  return {
    variant: variant.name,
    rep,
    warmup,
    tag,
    tTool: t.tool,
    tHandoff: t.handoff,
    tFirstAudio: t.firstAudio,
    opened,
    ops: mine.filter((op) => op.at > t.tool - 1 && op.at <= t.firstAudio),
  };
}

const hardStop = setTimeout(() => {
  log('hard stop after 14 min');
  process.exit(1);
}, 14 * 60_000);
hardStop.unref();

try {
  if (!BASE_URL) throw new BenchFailure('RT_MOCK_BASE_URL is not set (bench/realtime.ts sets it)');
  const wall0 = performance.now();
  const runs = [];
  for (let rep = 0; rep < WARMUP + REPS; rep++) {
    for (const variant of VARIANTS) runs.push(await runOnce(variant, rep, rep < WARMUP));
    log(`round ${rep + 1}/${WARMUP + REPS} done`);
  }
  const cpus = os.cpus();
  const meta = {
    framework: '@livekit/agents',
    agents: `@livekit/agents ${pkgVersion('@livekit/agents')}, @livekit/agents-plugin-openai ${pkgVersion('@livekit/agents-plugin-openai')}`,
    node: process.version,
    cpuModel: cpus[0]?.model?.trim() ?? null,
    cores: cpus.length,
    date: new Date().toISOString(),
    wallMs: Math.round(performance.now() - wall0),
  };
  writeStdout(JSON.stringify({ meta, runs }) + '\n', () => process.exit(0));
} catch (e) {
  log('FAILED:', e?.stack ?? e);
  process.exit(1);
}
