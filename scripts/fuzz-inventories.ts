/**
 * Compares edgeadm's Ansible inventory reader with `ansible-inventory --list`
 * on more seeded cases than CI runs (test/support/differential/
 * ansible-inventory-cases.ts makes them):
 *
 *   node --import ./bench/support/register-ts.js scripts/fuzz-inventories.ts --cases 50000 --seed 100000
 *
 * Prints a summary and each difference with its smallest case; exits 1 when
 * there is one. Replay a seed with `--cases 1 --seed <seed>`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  ansiblePython,
  formatInventoryFailure,
  runInventoryDifferential,
} from '../test/support/differential/ansible-inventory-differential.js';

const { values } = parseArgs({
  options: { cases: { type: 'string', default: '20000' }, seed: { type: 'string', default: '100000' } },
});
const cases = Number(values.cases);
const first = Number(values.seed);
if (!Number.isSafeInteger(cases) || cases < 1 || !Number.isSafeInteger(first) || first < 0) {
  console.error('usage: fuzz-inventories.ts --cases N --seed S (positive integers)');
  process.exit(2);
}
const python = await ansiblePython();
if (python === undefined) {
  console.error('ansible-inventory is not installed (apt-get install ansible-core)');
  process.exit(2);
}
const work = await mkdtemp(join(tmpdir(), 'edgeadm-fuzz-inventories-'));
const started = Date.now();
try {
  const report = await runInventoryDifferential({ python, first, cases, workDir: work, maxShrunk: 5 });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`${report.cases} inventories (seeds ${first}…${first + cases - 1}) in ${seconds} s`);
  console.log(`hosts compared: ${report.hosts}; refused by both (or by design): ${report.refusals}`);
  for (const failure of report.failures) console.log(`FAIL ${formatInventoryFailure(failure)}`);
  console.log(report.failures.length === 0 ? 'no difference found' : `${report.failures.length} differences`);
  process.exitCode = report.failures.length === 0 ? 0 : 1;
} finally {
  await rm(work, { recursive: true, force: true });
}
