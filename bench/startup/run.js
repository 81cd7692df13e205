// Start-up benchmark: `edgeadm version` and `edgeadm --help`, from the single
// binary and from bin/run.js, against bare `node -e 0` of the same Node 24,
// interleaved in one run so that machine noise hits every case alike.
//
//   npm run build && npm run build:binary && npm run bench:startup [-- --runs 40]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '40' }, json: { type: 'boolean' } } });
const runs = Number(values.runs);
const root = fileURLToPath(new URL('../..', import.meta.url));
const binary = join(root, 'dist', `edgeadm-linux-${process.arch}`);
const node = process.execPath;
if (!existsSync(binary)) throw new Error(`${binary} is missing: run "npm run build:binary" first`);

// Logs go to a scratch home, so the benchmark leaves nothing behind in ~/.edgeadm.
const env = { ...process.env, EDGEADM_HOME: mkdtempSync(join(tmpdir(), 'edgeadm-bench-')), NO_COLOR: '1' };
const cases = [
  { name: 'node -e 0 (baseline)', cmd: node, args: ['-e', '0'] },
  { name: 'binary: version', cmd: binary, args: ['version'] },
  { name: 'binary: --help', cmd: binary, args: ['--help'] },
  { name: 'bin/run.js: version', cmd: node, args: [join(root, 'bin/run.js'), 'version'] },
  { name: 'bin/run.js: --help', cmd: node, args: [join(root, 'bin/run.js'), '--help'] },
];

function once(c) {
  const start = process.hrtime.bigint();
  const r = spawnSync(c.cmd, c.args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`${c.name} exited ${r.status}: ${r.stderr}`);
  return ms;
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
for (const c of cases) once(c); // warm the page cache
const samples = new Map(cases.map((c) => [c.name, []]));
for (let i = 0; i < runs; i++) for (const c of cases) samples.get(c.name).push(once(c));

const baseline = quantile(
  [...samples.get(cases[0].name)].sort((a, b) => a - b),
  0.5,
);
const rows = cases.map((c) => {
  const s = [...samples.get(c.name)].sort((a, b) => a - b);
  const median = quantile(s, 0.5);
  return {
    case: c.name,
    median_ms: +median.toFixed(1),
    p10_ms: +quantile(s, 0.1).toFixed(1),
    p90_ms: +quantile(s, 0.9).toFixed(1),
    x_baseline: +(median / baseline).toFixed(2),
  };
});
if (values.json) console.log(JSON.stringify({ node: process.version, runs, rows }, null, 2));
else {
  console.log(`node ${process.version}, ${runs} interleaved runs per case, ${new Date().toISOString()}`);
  console.log('| case | median ms | p10 ms | p90 ms | × node -e 0 |\n|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.case} | ${r.median_ms} | ${r.p10_ms} | ${r.p90_ms} | ${r.x_baseline} |`);
}
