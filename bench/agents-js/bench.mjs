// Headless benchmark of LiveKit @livekit/agents (pinned 1.9.0) for the baton side-by-side bench.
//
// Run (Node 24):  npm ci --prefix bench/agents-js
//                 node --expose-gc bench/agents-js/bench.mjs
//
// Prints exactly ONE JSON object on stdout; every diagnostic goes to stderr. Exits by itself
// (process.exit), with code 0 on success and 1 on any failure (then stdout stays empty).
//
// Set-up, identical for every measurement: AgentSession without a room (text-only), LLM =
// voice.testing.FakeLLM with zero ttft/duration, vad: null, no STT/TTS, framework logger silent.
//
// Env knobs: N (200), WARMUP (20), WARM_AFTER (500: N more runs measured after this many),
//            LIFECYCLE_N (20), LIFECYCLE_WARMUP (3), IDLE_SESSIONS (1000), IDLE_BUDGET_S (120),
//            SAMPLES (1 = include raw samples, 0 = omit),
//            ITER_TIMEOUT_MS (10000), SECTIONS (comma list of handoff,lifecycle,idleHeap; default all),
//            CLOSE_BATCH (50): handoff sessions are closed in batches of this many, between
//            iterations (1 = close each session right after its iteration, as the anchors did).
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { createRequire } from 'node:module';
import v8 from 'node:v8';
import vm from 'node:vm';

// ---- stdout discipline: everything except the final JSON goes to stderr ----------------------
const writeStdout = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);
console.log = console.error;
console.info = console.error;
console.debug = console.error;

const log = (...a) => console.error('[agents-js bench]', ...a);

const { initializeLogger, llm, voice } = await import('@livekit/agents');
initializeLogger({ pretty: false, level: 'silent' });
const { AgentSession, Agent } = voice;

const envInt = (name, dflt) => {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`env ${name}=${v} is not a non-negative number`);
  return Math.floor(n);
};
const N = envInt('N', 200);
const WARMUP = envInt('WARMUP', 20);
// The same measurement once the JIT has optimized the path (0: not measured).
const WARM_AFTER = envInt('WARM_AFTER', 500);
const LIFECYCLE_N = envInt('LIFECYCLE_N', 20);
const LIFECYCLE_WARMUP = envInt('LIFECYCLE_WARMUP', 3);
const IDLE_SESSIONS = envInt('IDLE_SESSIONS', 1000);
const IDLE_BUDGET_MS = envInt('IDLE_BUDGET_S', 120) * 1000;
const SAMPLES = process.env.SAMPLES !== '0';
const ITER_TIMEOUT_MS = envInt('ITER_TIMEOUT_MS', 10_000);
const CLOSE_BATCH = Math.max(1, envInt('CLOSE_BATCH', 50));
const SECTIONS = new Set(
  (process.env.SECTIONS ?? 'handoff,lifecycle,idleHeap').split(',').map((s) => s.trim()).filter(Boolean),
);

// ---- helpers -----------------------------------------------------------------------------------
class BenchFailure extends Error {}

const withTimeout = (promise, ms, what) => {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new BenchFailure(`timeout after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, t]).finally(() => clearTimeout(timer));
};

// Linear-interpolation quantile (numpy/R-7 default): q(0.5) is the usual median.
const quantile = (sorted, p) => {
  if (sorted.length === 0) return null;
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.ceil(h);
  return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
};
const r3 = (x) => (x === null ? null : Math.round(x * 1000) / 1000);
const summarize = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const out = {
    n: s.length,
    medianMs: r3(quantile(s, 0.5)),
    p90Ms: r3(quantile(s, 0.9)),
    minMs: r3(s.length ? s[0] : null),
    maxMs: r3(s.length ? s[s.length - 1] : null),
  };
  if (SAMPLES) out.samples = xs.map(r3);
  return out;
};

// Prefer `node --expose-gc`; otherwise fall back to enabling the flag at run time.
let gcSource = typeof global.gc === 'function' ? '--expose-gc' : null;
let gcFn = global.gc;
if (!gcFn) {
  try {
    v8.setFlagsFromString('--expose-gc');
    gcFn = vm.runInNewContext('gc');
    if (typeof gcFn === 'function') gcSource = 'v8.setFlagsFromString fallback';
  } catch {}
}
const gcNow = async () => {
  if (typeof gcFn !== 'function') return false;
  for (let i = 0; i < 3; i++) {
    gcFn();
    await new Promise((r) => setImmediate(r));
  }
  return true;
};

const require = createRequire(import.meta.url);
const pkgVersion = (name) => {
  try {
    return JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')).version;
  } catch {
    // packages with an "exports" map that hides package.json: walk from the entry point
    try {
      let dir = require.resolve(name);
      for (let i = 0; i < 6; i++) {
        dir = dir.slice(0, dir.lastIndexOf('/'));
        try {
          const pj = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8'));
          if (pj.name === name) return pj.version;
        } catch {}
      }
    } catch {}
    return null;
  }
};

// ---- 1. handoff --------------------------------------------------------------------------------
// One iteration, on a fresh AgentSession:
//   AgentA (current) gets user input "go"; FakeLLM answers with one tool call `transfer`;
//   transfer.execute() returns llm.handoff({ agent: agentB }) (no `returns`, so no tool reply on A);
//   AgentB.onEnter() calls session.generateReply(); FakeLLM answers REPLY_TEXT; onEnter awaits
//   the SpeechHandle's playout.
// Timestamps (performance.now()):
//   runCall    just before session.run({ userInput: 'go' })
//   toolStart  first statement of transfer.execute()
//   onEnter    first statement of AgentB.onEnter()
//   replyDone  right after `await handle.waitForPlayout()` of AgentB's first reply
//   runDone    right after `await run.wait()` (RunResult resolved)
const REPLY_TEXT = 'Hello from AgentB';
const GREET_KEY = 'instructions: greet'; // FakeLLM keys generateReply() on the last system line

async function handoffOnce(iter, sink) {
  const t = {};
  let replyHandle;
  let resolveReply;
  let rejectReply;
  const replyDone = new Promise((res, rej) => {
    resolveReply = res;
    rejectReply = rej;
  });

  class AgentB extends Agent {
    constructor() {
      super({ instructions: 'You are AgentB' });
    }
    async onEnter() {
      t.onEnter = performance.now();
      try {
        replyHandle = this.session.generateReply({ instructions: GREET_KEY });
        await replyHandle.waitForPlayout();
        t.replyDone = performance.now();
        resolveReply();
      } catch (e) {
        rejectReply(e);
      }
    }
  }
  const agentB = new AgentB();

  class AgentA extends Agent {
    constructor() {
      super({
        instructions: 'You are AgentA',
        tools: {
          transfer: llm.tool({
            description: 'Transfer the user to AgentB',
            execute: async () => {
              t.toolStart = performance.now();
              return llm.handoff({ agent: agentB });
            },
          }),
        },
      });
    }
  }
  const agentA = new AgentA();

  const fake = new voice.testing.FakeLLM([
    { input: 'go', content: '', toolCalls: [{ name: 'transfer', args: {} }], ttft: 0, duration: 0 },
    { input: GREET_KEY, content: REPLY_TEXT, ttft: 0, duration: 0 },
  ]);
  const session = new AgentSession({ llm: fake, vad: null });
  sink.push(session); // closed by the caller, between iterations (see CLOSE_BATCH)
  await withTimeout(session.start({ agent: agentA }), ITER_TIMEOUT_MS, `iteration ${iter}: session.start`);

  t.runCall = performance.now();
  const run = session.run({ userInput: 'go' });
  await withTimeout(run.wait(), ITER_TIMEOUT_MS, `iteration ${iter}: run.wait()`);
  t.runDone = performance.now();
  await withTimeout(replyDone, ITER_TIMEOUT_MS, `iteration ${iter}: AgentB first reply`);

  // ---- correctness, every iteration ----
  const fail = (msg) => {
    throw new BenchFailure(`iteration ${iter}: ${msg}`);
  };
  for (const k of ['runCall', 'toolStart', 'onEnter', 'replyDone', 'runDone']) {
    if (typeof t[k] !== 'number') fail(`timestamp ${k} missing`);
  }
  if (!(t.runCall <= t.toolStart && t.toolStart <= t.onEnter && t.onEnter <= t.replyDone)) {
    fail(`timestamps out of order ${JSON.stringify(t)}`);
  }
  if (session.currentAgent !== agentB) {
    fail(`current agent is ${session.currentAgent?.constructor?.name}, expected AgentB`);
  }
  if (!replyHandle.done() || replyHandle.interrupted) {
    fail(`AgentB reply handle done=${replyHandle.done()} interrupted=${replyHandle.interrupted}`);
  }
  const msgs = replyHandle.chatItems.filter((i) => i.type === 'message' && i.role === 'assistant');
  if (msgs.length !== 1 || msgs[0].textContent !== REPLY_TEXT) {
    fail(`AgentB reply items ${JSON.stringify(msgs.map((m) => m.textContent))}, expected ["${REPLY_TEXT}"]`);
  }
  const types = run.events.map((e) => e.type);
  const handoffEv = run.events.find((e) => e.type === 'agent_handoff');
  if (!types.includes('function_call') || !handoffEv) fail(`run events ${JSON.stringify(types)}`);
  if (handoffEv.newAgent !== agentB || handoffEv.oldAgent !== agentA) {
    fail('agent_handoff event has the wrong agents');
  }
  // The old agent must not have spoken: no assistant message other than AgentB's greeting.
  const spoken = session.history.items.filter((i) => i.type === 'message' && i.role === 'assistant');
  if (spoken.length !== 1 || spoken[0].textContent !== REPLY_TEXT) {
    fail(`assistant messages in history ${JSON.stringify(spoken.map((m) => m.textContent))}`);
  }
  return {
    toolToReplyDone: t.replyDone - t.toolStart,
    runToResolved: t.runDone - t.runCall,
    toolToOnEnter: t.onEnter - t.toolStart,
    onEnterToReplyDone: t.replyDone - t.onEnter,
    replyBeforeRunResolved: t.replyDone <= t.runDone,
  };
}

async function benchHandoff() {
  const t0 = performance.now();
  const open = [];
  const closeOpen = async () => {
    const batch = open.splice(0);
    const settled = await withTimeout(
      Promise.allSettled(batch.map((s) => s.close())),
      ITER_TIMEOUT_MS,
      'closing a batch of handoff sessions',
    );
    const bad = settled.find((r) => r.status === 'rejected');
    if (bad) throw new BenchFailure(`session.close() failed: ${bad.reason?.stack ?? bad.reason}`);
  };
  const rows = [];
  const warmRows = [];
  const total = WARM_AFTER > WARMUP + N ? WARM_AFTER + N : WARMUP + N;
  try {
    for (let i = 0; i < total; i++) {
      const row = await handoffOnce(i < WARMUP ? `warmup ${i}` : i - WARMUP, open);
      if (i >= WARMUP && i < WARMUP + N) rows.push(row);
      if (total > WARMUP + N && i >= WARM_AFTER) warmRows.push(row);
      if (open.length >= CLOSE_BATCH) await closeOpen();
    }
    await closeOpen();
  } catch (e) {
    await closeOpen().catch((e2) => log('also failed to close sessions:', e2?.message ?? e2));
    throw e;
  }
  const col = (k, of = rows) => summarize(of.map((r) => r[k]));
  const times = (of) => ({
    toolToReplyDone: col('toolToReplyDone', of),
    runToResolved: col('runToResolved', of),
    toolToOnEnter: col('toolToOnEnter', of),
    onEnterToReplyDone: col('onEnterToReplyDone', of),
  });
  const out = {
    n: N,
    warmup: WARMUP,
    closeBatch: CLOSE_BATCH,
    toolToReplyDone: col('toolToReplyDone'),
    runToResolved: col('runToResolved'),
    toolToOnEnter: col('toolToOnEnter'),
    onEnterToReplyDone: col('onEnterToReplyDone'),
    // how many measured iterations had AgentB's reply done before run.wait() resolved
    replyDoneBeforeRunResolved: rows.filter((r) => r.replyBeforeRunResolved).length,
    warm: warmRows.length > 0 ? { after: WARM_AFTER, ...times(warmRows) } : undefined,
    wallMs: r3(performance.now() - t0),
  };
  log(
    `handoff: tool->reply done median ${out.toolToReplyDone.medianMs} ms, run()->resolved median ${out.runToResolved.medianMs} ms (N=${N}` +
      `${out.warm ? `; after ${WARM_AFTER} runs: ${out.warm.toolToReplyDone.medianMs} ms` : ''}, ${out.wallMs.toFixed(0)} ms wall)`,
  );
  return out;
}

// ---- 2. lifecycle ------------------------------------------------------------------------------
// Per session (fresh each time): start = session.start({agent}) called -> resolved (idle session,
// nothing else running); close = session.close() called -> resolved, on that same idle session.
// Also closeAfterTurn: a second fresh session that ran one user turn (run({userInput}) -> reply)
// before close(), as in the anchors' lifecycle probe.
async function benchLifecycle() {
  const t0 = performance.now();
  const start = [];
  const close = [];
  const closeAfterTurn = [];
  for (let i = 0; i < LIFECYCLE_WARMUP + LIFECYCLE_N; i++) {
    const measured = i >= LIFECYCLE_WARMUP;
    {
      const fake = new voice.testing.FakeLLM([{ input: 'hi', content: 'hello' }]);
      const session = new AgentSession({ llm: fake, vad: null });
      const agent = new Agent({ instructions: 'You are a test agent' });
      let t = performance.now();
      await withTimeout(session.start({ agent }), ITER_TIMEOUT_MS, `lifecycle ${i}: start`);
      const dStart = performance.now() - t;
      t = performance.now();
      await withTimeout(session.close(), ITER_TIMEOUT_MS, `lifecycle ${i}: close`);
      const dClose = performance.now() - t;
      if (measured) {
        start.push(dStart);
        close.push(dClose);
      }
    }
    {
      const fake = new voice.testing.FakeLLM([{ input: 'hi', content: 'hello' }]);
      const session = new AgentSession({ llm: fake, vad: null });
      await withTimeout(
        session.start({ agent: new Agent({ instructions: 'You are a test agent' }) }),
        ITER_TIMEOUT_MS,
        `lifecycle ${i}: start (turn)`,
      );
      const run = await withTimeout(session.run({ userInput: 'hi' }).wait(), ITER_TIMEOUT_MS, `lifecycle ${i}: run`);
      const last = run.events[run.events.length - 1];
      if (last?.type !== 'message' || last.item?.textContent !== 'hello') {
        throw new BenchFailure(`lifecycle ${i}: one-turn run did not answer "hello"`);
      }
      const t = performance.now();
      await withTimeout(session.close(), ITER_TIMEOUT_MS, `lifecycle ${i}: close (after turn)`);
      if (measured) closeAfterTurn.push(performance.now() - t);
    }
  }
  const out = {
    n: LIFECYCLE_N,
    warmup: LIFECYCLE_WARMUP,
    start: summarize(start),
    close: summarize(close),
    closeAfterTurn: summarize(closeAfterTurn),
    wallMs: r3(performance.now() - t0),
  };
  log(
    `lifecycle: start median ${out.start.medianMs} ms, close median ${out.close.medianMs} ms, close after a turn median ${out.closeAfterTurn.medianMs} ms`,
  );
  return out;
}

// ---- 3. idle heap ------------------------------------------------------------------------------
// IDLE_SESSIONS fresh sessions (each with its own FakeLLM and Agent) started one after another in
// this process and left open (idle, no turn). gc before and after; per-session = delta / count.
// Then all are closed concurrently (Promise.all of close()); closeAllMs = wall time of that.
async function benchIdleHeap() {
  const gcAvailable = await gcNow();
  if (!gcAvailable) log('WARNING: no gc() available; heap numbers are unreliable (run with node --expose-gc)');
  else if (gcSource !== '--expose-gc') log(`note: gc() obtained through ${gcSource}; prefer node --expose-gc`);
  const before = process.memoryUsage();
  const sessions = [];
  const deadline = performance.now() + IDLE_BUDGET_MS;
  let limitedBy = null;
  const t0 = performance.now();
  for (let i = 0; i < IDLE_SESSIONS; i++) {
    if (performance.now() > deadline) {
      limitedBy = `time budget: ${IDLE_BUDGET_MS / 1000} s reached after ${i} sessions`;
      break;
    }
    try {
      const fake = new voice.testing.FakeLLM([{ input: 'hi', content: 'hello' }]);
      const session = new AgentSession({ llm: fake, vad: null });
      await withTimeout(
        session.start({ agent: new Agent({ instructions: 'You are a test agent' }) }),
        ITER_TIMEOUT_MS,
        `idle session ${i}: start`,
      );
      sessions.push(session);
    } catch (e) {
      limitedBy = `session ${i} failed to start: ${e?.message ?? e}`;
      break;
    }
    if ((i + 1) % 250 === 0) log(`idleHeap: ${i + 1} sessions started`);
  }
  const startAllMs = performance.now() - t0;
  await gcNow();
  const after = process.memoryUsage();
  const count = sessions.length;
  if (limitedBy) log(`idleHeap limited: ${limitedBy}`);

  const tc = performance.now();
  const settled = await withTimeout(
    Promise.allSettled(sessions.map((s) => s.close())),
    Math.max(ITER_TIMEOUT_MS, 60_000),
    'closing idle sessions',
  );
  const closeAllMs = performance.now() - tc;
  const closeFailures = settled.filter((s) => s.status === 'rejected').length;
  sessions.length = 0;
  await gcNow();
  const afterClose = process.memoryUsage();

  const per = (k) => (count ? Math.round((after[k] - before[k]) / count) : null);
  const out = {
    sessions: count,
    requested: IDLE_SESSIONS,
    heapBytesPerSession: per('heapUsed'),
    rssBytesPerSession: per('rss'),
    externalBytesPerSession: per('external'),
    startAllMs: r3(startAllMs),
    closeAllMs: r3(closeAllMs),
    closeMode: 'concurrent',
    closeFailures,
    gc: gcAvailable,
    heapUsedBefore: before.heapUsed,
    heapUsedAfter: after.heapUsed,
    heapUsedAfterClose: afterClose.heapUsed,
    rssBefore: before.rss,
    rssAfter: after.rss,
    limitedBy,
  };
  const kib = (b) => (b === null ? 'n/a' : `${(b / 1024).toFixed(1)} KiB`);
  log(
    `idleHeap: ${count} sessions, ${kib(out.heapBytesPerSession)} heap/session, ${kib(out.rssBytesPerSession)} rss/session, started in ${startAllMs.toFixed(0)} ms, closed all in ${closeAllMs.toFixed(0)} ms`,
  );
  return out;
}

// ---- main --------------------------------------------------------------------------------------
async function main() {
  const wall0 = performance.now();
  const cpus = os.cpus();
  const result = {
    meta: {
      framework: '@livekit/agents',
      agentsVersion: pkgVersion('@livekit/agents'),
      rtcNodeVersion: pkgVersion('@livekit/rtc-node'),
      zodVersion: pkgVersion('zod'),
      node: process.version,
      cpuModel: cpus[0]?.model ?? null,
      cores: cpus.length,
      platform: `${process.platform}-${process.arch}`,
      gc: gcSource,
      setup: 'AgentSession without room, voice.testing.FakeLLM (ttft 0, duration 0), vad: null, no STT/TTS, logger silent',
      quantiles: 'linear interpolation (numpy default); medianMs = q(0.5), p90Ms = q(0.9)',
      date: new Date().toISOString(),
      wallMs: null,
    },
  };
  log(`@livekit/agents ${result.meta.agentsVersion}, rtc-node ${result.meta.rtcNodeVersion}, node ${process.version}`);
  if (!process.version.startsWith('v24.')) log(`note: expected Node 24, running ${process.version}`);
  if (SECTIONS.has('handoff')) result.handoff = await benchHandoff();
  if (SECTIONS.has('lifecycle')) result.lifecycle = await benchLifecycle();
  if (SECTIONS.has('idleHeap')) result.idleHeap = await benchIdleHeap();
  result.meta.wallMs = r3(performance.now() - wall0);
  return result;
}

const hardStop = setTimeout(() => {
  log('FAILED: whole benchmark exceeded its hard limit (15 min)');
  process.exit(1);
}, 15 * 60_000);
hardStop.unref();

try {
  const result = await main();
  writeStdout(JSON.stringify(result) + '\n', () => process.exit(0));
} catch (e) {
  log('FAILED:', e?.stack ?? e);
  process.exit(1);
}
