/**
 * Compares edgeadm's ssh config resolution with `ssh -G` on more seeded
 * configurations than CI runs (test/support/differential/ssh-config-cases.ts):
 *
 *   node --import ./bench/support/register-ts.js scripts/fuzz-ssh-configs.ts --cases 20000 --seed 100000
 *
 * Prints a summary and each difference with its smallest configuration;
 * exits 1 when there is one. Replay a seed with `--cases 1 --seed <seed>`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatSshFailure, runSshConfigDifferential } from '../test/support/differential/ssh-config-differential.js';

const { values } = parseArgs({
  options: { cases: { type: 'string', default: '5000' }, seed: { type: 'string', default: '100000' } },
});
const cases = Number(values.cases);
const first = Number(values.seed);
if (!Number.isSafeInteger(cases) || cases < 1 || !Number.isSafeInteger(first) || first < 0) {
  console.error('usage: fuzz-ssh-configs.ts --cases N --seed S (positive integers)');
  process.exit(2);
}
const work = await mkdtemp(join(tmpdir(), 'edgeadm-fuzz-ssh-'));
const started = Date.now();
try {
  const report = await runSshConfigDifferential({ first, cases, workDir: work, maxShrunk: 5 });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(
    `${report.cases} configurations (seeds ${first}…${first + cases - 1}), ${report.lookups} hosts, in ${seconds} s`,
  );
  console.log(`refused by ssh (and edgeadm), or refused by design: ${report.refusals}`);
  for (const failure of report.failures) console.log(`FAIL ${formatSshFailure(failure)}`);
  console.log(report.failures.length === 0 ? 'no difference found' : `${report.failures.length} differences`);
  process.exitCode = report.failures.length === 0 ? 0 : 1;
} finally {
  await rm(work, { recursive: true, force: true });
}
