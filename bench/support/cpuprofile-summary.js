// Where a process's CPU went, from a V8 CPU profile (node --cpu-prof; the
// tunnel bench writes the hub's and the agent's with --profile DIR): busy
// time by area (edgeadm's own folders, each node: module, native calls, GC)
// and the functions with the most self time. Idle time is left out of the
// shares.
//
//   node bench/support/cpuprofile-summary.js DIR/current-hub.cpuprofile [--top 25] [--json]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' }, json: { type: 'boolean' } },
});
if (positionals.length === 0) {
  process.stderr.write('usage: node bench/support/cpuprofile-summary.js FILE.cpuprofile… [--top N] [--json]\n');
  process.exit(2);
}

/** The area a frame belongs to: an edgeadm folder, a node: module, a dependency, or V8's own. */
function areaOf({ url, functionName }) {
  if (url === '') return functionName === '(garbage collector)' ? 'GC' : `native ${functionName || '(anonymous)'}`;
  if (url.startsWith('node:')) return url;
  const ours = /\/lib\/([^/]+)\//.exec(url);
  if (ours && !url.includes('/node_modules/')) return `edgeadm ${ours[1]}`;
  const dependency = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  return dependency ? `dependency ${dependency[1]}` : 'other';
}

const summaries = positionals.map((file) => {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfMicros = new Map();
  profile.samples.forEach((id, i) => selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byArea = new Map();
  const byFunction = new Map();
  let busy = 0;
  for (const [id, micros] of selfMicros) {
    const frame = nodes.get(id).callFrame;
    if (frame.functionName === '(idle)') continue;
    busy += micros;
    const area = areaOf(frame);
    byArea.set(area, (byArea.get(area) ?? 0) + micros);
    const where =
      frame.url === '' ? '' : ` ${frame.url.replace(/^.*\/(lib|node_modules)\//, '$1/')}:${frame.lineNumber + 1}`;
    const name = `${frame.functionName || '(anonymous)'}${where}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
  }
  const top = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, Number(values.top))
      .map(([name, micros]) => ({
        name,
        ms: Math.round(micros / 1000),
        share: Number(((100 * micros) / busy).toFixed(1)),
      }));
  return { file, busyMs: Math.round(busy / 1000), areas: top(byArea), functions: top(byFunction) };
});

if (values.json) process.stdout.write(`${JSON.stringify(summaries, null, 2)}\n`);
else {
  for (const s of summaries) {
    const lines = [`${s.file}: ${s.busyMs} ms busy`, '  by area:'];
    for (const a of s.areas) lines.push(`    ${String(a.share).padStart(5)} %  ${a.name}`);
    lines.push('  by function (self time):');
    for (const f of s.functions) lines.push(`    ${String(f.share).padStart(5)} %  ${f.name}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}
