// agents-js 1.9 voice turns, headless, on its own plugins pointed at local mocks: Deepgram STT,
// Cartesia TTS, OpenAI chat LLM (`@livekit/agents-plugin-*`) and Silero VAD. The caller is a WAV
// (PCM16 mono) streamed at real-time pace in 20 ms frames into `session.input.audio`; the agent's
// audio comes out of `session.output.audio`. Used by bench/voice-side-by-side.ts (and by
// bench/capacity.ts and test/mocks/agents-js-plugins-official.test.ts). Run with Node 24:
//
//   node bench/agents-js/voice.mjs --wav caller.wav --deepgram ws://127.0.0.1:P1 \
//     --cartesia http://127.0.0.1:P2 --openai http://127.0.0.1:P3/v1 [options]
//
// Options (each also an env variable in capitals, `--min-endpointing-ms` = MIN_ENDPOINTING_MS):
//   --wav PATH               the caller's speech (RIFF PCM16 mono; any rate the plugins resample)
//   --deepgram URL           Deepgram STT base URL (the plugin appends /v1/listen)
//   --cartesia URL           Cartesia base URL, http(s) (the plugin appends /tts/websocket)
//   --openai URL             OpenAI base URL, ending in /v1
//   --deepgram-key, --cartesia-key, --openai-key   keys (default dg-test, ct-test, sk-test: the mocks')
//   --turns N                turns to measure (default 20), after --warmup N (default 1)
//   --handoff 0|1            0: one agent answers; 1: the greeter's tool hands off to a second
//                            agent that answers on entering (default 0)
//   --session turn|call      turn: a fresh AgentSession per turn (plugins shared, so sockets
//                            are reused); call: one session for every turn, each turn once the
//                            last reply has played out (with --handoff 1 the greeter is put back
//                            after each turn; baton's twin keeps the weather agent) (default turn)
//   --min-endpointing-ms N   turnHandling.endpointing.minDelay (default 500)
//   --vad-min-silence-ms N   Silero minSilenceDuration (default 300)
//   --vad-min-speech-ms N    Silero minSpeechDuration (default 100)
//   --vad-threshold X        Silero activationThreshold (default 0.5)
//   --preemptive 0|1         turnHandling.preemptiveGeneration.enabled (default 1, agents-js's default)
//   --lead-ms N              silence streamed before the speech (default 500)
//   --tail-ms N              most silence streamed after it while waiting for the answer (default 5000)
//   --gap-ms N               silence between turns of one call (--session call; default 1500)
//   --speech-end-ms N        where the speech ends in the WAV (default: after its last 10 ms
//                            window with RMS above 500, the same rule as the parent's)
//   --output-rate N          the sink's sample rate (default 24000, Cartesia's; no resampling)
//
// stdout: JSON lines, nothing else (console output of the framework goes to stderr):
//   {"type":"ready", framework, agentsVersion, plugins, node, timeOrigin, speechEndMs, wavRate, settings}
//     timeOrigin: performance.timeOrigin, to put this process's times on another's clock
//   {"type":"turn", turn, warmup, handoff, latencyMs, speechEndAt, firstSoundAt, firstFrameAt,
//    transcript, agent, thinkingAt, speakingAt, pushLagMaxMs}
//     latencyMs = firstSoundAt - speechEndAt: from the end of the speech in the WAV (the moment
//     the frame holding it was due, minus the rest of that frame) to the first sample with
//     |s| > 100 out of the sink, counted as if the sink played from its first frame in real time.
//     All times are performance.now() of this process. transcript: the user's final transcript;
//     agent: the agent that spoke; thinkingAt/speakingAt: AgentStateChanged (null if not seen).
//   {"type":"done", turns, wallMs}     then exit 0
//   {"type":"error", message}          then exit 1 (also for a turn with no audio by --tail-ms)
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const out = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);
console.log = console.error;
console.info = console.error;
console.debug = console.error;
const emit = (line) => out(JSON.stringify(line) + '\n');

const { values: argv } = parseArgs({
  options: Object.fromEntries(
    [
      'wav', 'deepgram', 'cartesia', 'openai', 'deepgram-key', 'cartesia-key', 'openai-key', 'turns',
      'warmup', 'handoff', 'session', 'min-endpointing-ms', 'vad-min-silence-ms', 'vad-min-speech-ms',
      'vad-threshold', 'preemptive', 'lead-ms', 'tail-ms', 'gap-ms', 'speech-end-ms', 'output-rate',
    ].map((name) => [name, { type: 'string' }]),
  ),
});
const opt = (name, fallback) => argv[name] ?? process.env[name.toUpperCase().replaceAll('-', '_')] ?? fallback;
const num = (name, fallback) => {
  const v = Number(opt(name, fallback));
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} must be a non-negative number`);
  return v;
};
const required = (name) => {
  const v = opt(name, undefined);
  if (v === undefined) throw new Error(`--${name} is required`);
  return v;
};

const fail = (message) => {
  emit({ type: 'error', message });
  process.exit(1);
};
process.on('unhandledRejection', (e) => fail(`unhandled rejection: ${e?.stack ?? e}`));

const settings = {
  wav: required('wav'),
  deepgram: required('deepgram'),
  cartesia: required('cartesia'),
  openai: required('openai'),
  turns: num('turns', 20),
  warmup: num('warmup', 1),
  handoff: opt('handoff', '0') === '1',
  session: opt('session', 'turn'),
  minEndpointingMs: num('min-endpointing-ms', 500),
  vadMinSilenceMs: num('vad-min-silence-ms', 300),
  vadMinSpeechMs: num('vad-min-speech-ms', 100),
  vadThreshold: num('vad-threshold', 0.5),
  preemptive: opt('preemptive', '1') === '1',
  leadMs: num('lead-ms', 500),
  tailMs: num('tail-ms', 5000),
  gapMs: num('gap-ms', 1500),
  outputRate: num('output-rate', 24000),
};
if (settings.session !== 'turn' && settings.session !== 'call') fail('--session must be turn or call');

// ---- the caller's audio ------------------------------------------------------------------------
/** The PCM16 mono samples and rate of a RIFF WAV. */
const readWav = (path) => {
  const b = readFileSync(path);
  if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${path} is not a WAV`);
  let at = 12;
  let rate;
  while (at + 8 <= b.length) {
    const id = b.toString('ascii', at, at + 4);
    const size = b.readUInt32LE(at + 4);
    if (id === 'fmt ') {
      if (b.readUInt16LE(at + 8) !== 1 || b.readUInt16LE(at + 10) !== 1 || b.readUInt16LE(at + 22) !== 16) {
        throw new Error(`${path}: only PCM16 mono WAVs are taken`);
      }
      rate = b.readUInt32LE(at + 12);
    } else if (id === 'data') {
      if (rate === undefined) throw new Error(`${path}: data before fmt`);
      const end = Math.min(b.length, at + 8 + size);
      const samples = new Int16Array((end - at - 8) >> 1);
      for (let i = 0; i < samples.length; i++) samples[i] = b.readInt16LE(at + 8 + i * 2);
      return { rate, samples };
    }
    at += 8 + size + (size & 1);
  }
  throw new Error(`${path}: no data chunk`);
};
const wav = readWav(settings.wav);
/** After the last 10 ms window whose RMS is above 500 (ms). */
const speechEndOf = ({ rate, samples }) => {
  const w = rate / 100;
  let last = 0;
  for (let s = 0; s + w <= samples.length; s += w) {
    let e = 0;
    for (let i = s; i < s + w; i++) e += samples[i] * samples[i];
    if (Math.sqrt(e / w) > 500) last = s + w;
  }
  return (last / rate) * 1000;
};
const speechEndMs = opt('speech-end-ms', undefined) === undefined ? speechEndOf(wav) : num('speech-end-ms', 0);

// ---- agents-js -------------------------------------------------------------------------------
const versionOf = (name) => {
  try {
    return JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), 'utf8')).version;
  } catch {
    return null;
  }
};
const agentsVersion = versionOf('@livekit/agents');
const plugins = Object.fromEntries(
  ['deepgram', 'cartesia', 'openai', 'silero'].map((p) => [p, versionOf(`@livekit/agents-plugin-${p}`)]),
);
const { initializeLogger, llm, voice } = await import('@livekit/agents');
initializeLogger({ pretty: false, level: process.env.LK_LOG ?? 'silent' });
const { AudioFrame } = await import('@livekit/rtc-node');
const deepgram = await import('@livekit/agents-plugin-deepgram');
const cartesia = await import('@livekit/agents-plugin-cartesia');
const openai = await import('@livekit/agents-plugin-openai');
const silero = await import('@livekit/agents-plugin-silero');

const vad = await silero.VAD.load({
  minSpeechDuration: settings.vadMinSpeechMs,
  minSilenceDuration: settings.vadMinSilenceMs,
  activationThreshold: settings.vadThreshold,
  sampleRate: 16000,
});
const stt = new deepgram.STT({ apiKey: opt('deepgram-key', 'dg-test'), baseUrl: settings.deepgram });
const tts = new cartesia.TTS({ apiKey: opt('cartesia-key', 'ct-test'), baseUrl: settings.cartesia, sampleRate: settings.outputRate });
const chat = new openai.LLM({ apiKey: opt('openai-key', 'sk-test'), baseURL: settings.openai, model: 'gpt-4.1-mini' });

/** Frames pushed by the caller loop, read by the session. */
class PcmInput extends voice.AudioInput {
  #controller;
  constructor() {
    super();
    this.multiStream.addInputStream(new ReadableStream({ start: (c) => void (this.#controller = c) }));
  }
  push(frame) {
    this.#controller.enqueue(frame);
  }
}

const SILENT = 100;
/** A sink that "plays" each segment from its first frame in real time and notes the first sound. */
class TimedOutput extends voice.AudioOutput {
  #open = false;
  #segmentStart = 0;
  #samples = 0;
  turn = undefined;
  constructor(rate) {
    super(rate);
  }
  async captureFrame(frame) {
    await super.captureFrame(frame);
    const now = performance.now();
    if (!this.#open) {
      this.#open = true;
      this.#segmentStart = now;
      this.#samples = 0;
      this.onPlaybackStarted(Date.now());
      if (this.turn && this.turn.firstFrameAt === undefined) this.turn.firstFrameAt = now;
    }
    const t = this.turn;
    if (t && t.firstSoundAt === undefined) {
      const data = frame.data;
      for (let i = 0; i < data.length; i++) {
        if (data[i] > SILENT || data[i] < -SILENT) {
          const played = this.#segmentStart + ((this.#samples + i) / frame.sampleRate) * 1000;
          t.firstSoundAt = Math.max(now, played);
          t.agent = t.currentAgent?.();
          t.sound();
          break;
        }
      }
    }
    this.#samples += frame.samplesPerChannel;
  }
  flush() {
    super.flush();
    this.#finish(false);
  }
  clearBuffer() {
    this.#finish(true);
  }
  #finish(interrupted) {
    if (!this.#open) return;
    this.#open = false;
    this.onPlaybackFinished({ playbackPosition: this.#samples / this.sampleRate, interrupted });
  }
}

// ---- agents ----------------------------------------------------------------------------------
const INSTRUCTIONS = {
  direct: 'You answer questions about the weather.',
  greeter: 'You greet callers and transfer weather questions.',
  weather: 'You answer questions about the weather.',
  forecast: 'Give the forecast the caller asked for.',
};
class Weather extends voice.Agent {
  constructor() {
    super({ instructions: INSTRUCTIONS.weather });
  }
  async onEnter() {
    this.session.generateReply({ instructions: INSTRUCTIONS.forecast });
  }
}
const makeAgent = () =>
  settings.handoff
    ? new voice.Agent({
        instructions: INSTRUCTIONS.greeter,
        tools: {
          transfer_to_weather: llm.tool({
            description: 'Transfer the caller to the weather agent.',
            execute: async () => llm.handoff({ agent: new Weather() }),
          }),
        },
      })
    : new voice.Agent({ instructions: INSTRUCTIONS.direct });
const nameOf = (agent) => (agent instanceof Weather ? 'weather' : settings.handoff ? 'greeter' : 'direct');

const openSession = async () => {
  const session = new voice.AgentSession({
    stt,
    vad,
    llm: chat,
    tts,
    userAwayTimeout: null,
    aecWarmupDuration: null,
    turnHandling: {
      turnDetection: 'vad',
      endpointing: { mode: 'fixed', minDelay: settings.minEndpointingMs },
      interruption: { mode: 'vad' },
      preemptiveGeneration: { enabled: settings.preemptive },
    },
  });
  const input = new PcmInput();
  const output = new TimedOutput(settings.outputRate);
  session.input.audio = input;
  session.output.audio = output;
  const state = { turn: undefined };
  session.on(voice.AgentSessionEventTypes.UserInputTranscribed, (ev) => {
    if (ev.isFinal && state.turn) state.turn.transcript = `${state.turn.transcript ?? ''} ${ev.transcript}`.trim();
  });
  session.on(voice.AgentSessionEventTypes.AgentStateChanged, (ev) => {
    const t = state.turn;
    if (!t) return;
    if (ev.newState === 'thinking') t.thinkingAt ??= performance.now();
    if (ev.newState === 'speaking') t.speakingAt ??= performance.now();
  });
  session.on(voice.AgentSessionEventTypes.Error, (ev) => console.error('[agents-js voice] session error:', ev.error?.message ?? ev.error));
  await session.start({ agent: makeAgent() });
  return { session, input, output, state };
};

// ---- the caller ------------------------------------------------------------------------------
const FRAME_MS = 20;
const perFrame = (wav.rate * FRAME_MS) / 1000;
const silence = new Int16Array(perFrame);
const frameOf = (samples) => new AudioFrame(samples, wav.rate, 1, perFrame);
const speechFrames = [];
for (let s = 0; s < wav.samples.length; s += perFrame) {
  const f = new Int16Array(perFrame);
  f.set(wav.samples.subarray(s, Math.min(wav.samples.length, s + perFrame)));
  speechFrames.push(f);
}
const sleepUntil = (t) => new Promise((r) => setTimeout(r, Math.max(0, t - performance.now())));

/** Streams silence, the WAV, then silence until the answer's first sound (or tail-ms). */
const speak = async (call, t, leadMs) => {
  let sound;
  t.sound = () => sound?.();
  const heard = new Promise((r) => (sound = r));
  const frames = [
    ...Array.from({ length: Math.round(leadMs / FRAME_MS) }, () => silence),
    ...speechFrames,
  ];
  const speechEndFrame = Math.round(leadMs / FRAME_MS) * FRAME_MS + speechEndMs;
  const tailFrames = Math.ceil(settings.tailMs / FRAME_MS);
  const t0 = performance.now();
  let lagMax = 0;
  for (let k = 0; k < frames.length + tailFrames; k++) {
    const due = t0 + (k + 1) * FRAME_MS;
    await sleepUntil(due);
    lagMax = Math.max(lagMax, performance.now() - due);
    call.input.push(frameOf(k < frames.length ? frames[k] : silence));
    if ((k + 1) * FRAME_MS >= speechEndFrame && t.speechEndAt === undefined) t.speechEndAt = t0 + speechEndFrame;
    if (t.firstSoundAt !== undefined) break;
  }
  t.pushLagMaxMs = lagMax;
  await Promise.race([heard, sleepUntil(performance.now() + 50)]);
};

const wall0 = performance.now();
emit({ type: 'ready', framework: '@livekit/agents', agentsVersion, plugins, node: process.version, timeOrigin: performance.timeOrigin, speechEndMs, wavRate: wav.rate, settings });
let call = settings.session === 'call' ? await openSession() : undefined;
const total = settings.warmup + settings.turns;
for (let i = 0; i < total; i++) {
  const own = call ?? (await openSession());
  const t = { currentAgent: () => nameOf(own.session.currentAgent) };
  own.state.turn = t;
  own.output.turn = t;
  await speak(own, t, call && i > 0 ? settings.gapMs : settings.leadMs);
  if (t.firstSoundAt === undefined) fail(`turn ${i}: no audio within ${settings.tailMs} ms of the end of speech`);
  emit({
    type: 'turn',
    turn: i - settings.warmup,
    warmup: i < settings.warmup,
    handoff: settings.handoff,
    latencyMs: t.firstSoundAt - t.speechEndAt,
    speechEndAt: t.speechEndAt,
    firstSoundAt: t.firstSoundAt,
    firstFrameAt: t.firstFrameAt,
    transcript: t.transcript ?? null,
    agent: t.agent,
    thinkingAt: t.thinkingAt ?? null,
    speakingAt: t.speakingAt ?? null,
    pushLagMaxMs: t.pushLagMaxMs,
  });
  if (!call) await own.session.close();
  else {
    // let the reply play out before the next turn, as a caller would
    await own.output.waitForPlayout?.().catch(() => {});
    if (settings.handoff) await own.session.updateAgent?.(makeAgent());
  }
}
if (call) await call.session.close();
emit({ type: 'done', turns: settings.turns, wallMs: performance.now() - wall0 });
out('', () => process.exit(0));
