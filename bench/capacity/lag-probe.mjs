// Preloaded into each agents-js job of the capacity bench (`node --import`): measures the job's
// event-loop delay (perf_hooks.monitorEventLoopDelay, 10 ms resolution) from the end of its
// warm-up turn (the first stdout line with "warmup":true, so start-up is not counted) and, as the
// process exits, writes { p99Ms, maxMs } to $LAG_PROBE_DIR/<pid>.json. It changes nothing else:
// what the job writes to stdout goes out as it would.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const dir = process.env.LAG_PROBE_DIR;
if (dir) {
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  const write = process.stdout.write;
  let warm = false;
  process.stdout.write = function (chunk, ...rest) {
    if (!warm && String(chunk).includes('"warmup":true')) {
      warm = true;
      lag.reset();
    }
    return write.call(this, chunk, ...rest);
  };
  process.on('exit', () => {
    lag.disable();
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify({ p99Ms: lag.percentile(99) / 1e6, maxMs: lag.max / 1e6 }));
  });
}
