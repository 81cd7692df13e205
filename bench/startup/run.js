// Start-up benchmark: `edgeadm version` and `edgeadm --help`, from the single
// binary and from bin/run.js, against bare `node -e 0` of the same Node 24,
// interleaved in one run so that machine noise hits every case alike.
//
//   npm run build && npm run build:binary && npm run bench:startup [-- --runs 40] [-- --baseline GIT-REF|DIR]
//
// `--baseline` adds the binary of another build (a git ref of this repository,
// built in a scratch directory, or a built checkout: bench/support/baseline.js)
// as more cases of the same interleaved runs: before and after under the same
// load. Besides wall time, each case reports the CPU time of its processes
// (user + system, from this process's children totals), less sensitive to
// the other work on a shared machine, and the run prints the load average.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { prepareBaseline } from '../support/baseline.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '40' }, baseline: { type: 'string' }, json: { type: 'boolean' } },
});
const runs = Number(values.runs);
const root = fileURLToPath(new URL('../..', import.meta.url));
const binary = join(root, 'dist', `edgeadm-linux-${process.arch}`);
const node = process.execPath;
if (!existsSync(binary)) throw new Error(`${binary} is missing: run "npm run build:binary" first`);

// Logs go to a scratch home, so the benchmark leaves nothing behind in ~/.edgeadm.
const env = { ...process.env, EDGEADM_HOME: mkdtempSync(join(tmpdir(), 'edgeadm-bench-')), NO_COLOR: '1' };
const cases = [
  { name: 'node -e 0 (reference)', cmd: node, args: ['-e', '0'] },
  { name: 'binary: version', cmd: binary, args: ['version'] },
  { name: 'binary: --help', cmd: binary, args: ['--help'] },
  { name: 'bin/run.js: version', cmd: node, args: [join(root, 'bin/run.js'), 'version'] },
  { name: 'bin/run.js: --help', cmd: node, args: [join(root, 'bin/run.js'), '--help'] },
];
const before = values.baseline === undefined ? undefined : prepareBaseline(values.baseline, { isBinaryWanted: true });
if (before) {
  cases.splice(
    3,
    0,
    { name: `before (${before.label}) binary: version`, cmd: before.binary, args: ['version'] },
    { name: `before (${before.label}) binary: --help`, cmd: before.binary, args: ['--help'] },
  );
}
const loadAtStart = loadavg();

/** CPU time of this process's waited-for children so far (user + system), in ms (Linux /proc; 10 ms ticks, summed over many runs). */
function childrenCpuMs() {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

const cpuTotals = new Map(cases.map((c) => [c.name, 0]));
function once(c) {
  const cpuBefore = childrenCpuMs();
  const start = process.hrtime.bigint();
  const r = spawnSync(c.cmd, c.args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  cpuTotals.set(c.name, cpuTotals.get(c.name) + childrenCpuMs() - cpuBefore);
  if (r.status !== 0) throw new Error(`${c.name} exited ${r.status}: ${r.stderr}`);
  return ms;
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
for (const c of cases) once(c); // warm the page cache
for (const c of cases) cpuTotals.set(c.name, 0);
const samples = new Map(cases.map((c) => [c.name, []]));
for (let i = 0; i < runs; i++) for (const c of cases) samples.get(c.name).push(once(c));

const baseline = quantile(
  [...samples.get(cases[0].name)].sort((a, b) => a - b),
  0.5,
);
const nodeCpu = cpuTotals.get(cases[0].name) / runs;
const rows = cases.map((c) => {
  const s = [...samples.get(c.name)].sort((a, b) => a - b);
  const median = quantile(s, 0.5);
  const cpu = cpuTotals.get(c.name) / runs;
  return {
    case: c.name,
    median_ms: +median.toFixed(1),
    p10_ms: +quantile(s, 0.1).toFixed(1),
    p90_ms: +quantile(s, 0.9).toFixed(1),
    x_baseline: +(median / baseline).toFixed(2),
    cpu_ms: +cpu.toFixed(1),
    x_baseline_cpu: +(cpu / nodeCpu).toFixed(2),
  };
});
const load = { atStart: loadAtStart.map((x) => +x.toFixed(2)), atEnd: loadavg().map((x) => +x.toFixed(2)) };
if (values.json) {
  console.log(JSON.stringify({ node: process.version, runs, baseline: before?.label, load, rows }, null, 2));
} else {
  console.log(`node ${process.version}, ${runs} interleaved runs per case, ${new Date().toISOString()}`);
  if (before) console.log(`baseline: ${before.label} (${before.binary})`);
  console.log(`load average: ${load.atStart.join(' ')} at the start, ${load.atEnd.join(' ')} at the end`);
  console.log(
    '| case | median ms | p10 ms | p90 ms | × node -e 0 | CPU ms (mean) | CPU × node -e 0 |\n|---|---|---|---|---|---|---|',
  );
  for (const r of rows) {
    console.log(
      `| ${r.case} | ${r.median_ms} | ${r.p10_ms} | ${r.p90_ms} | ${r.x_baseline} | ${r.cpu_ms} | ${r.x_baseline_cpu} |`,
    );
  }
}
