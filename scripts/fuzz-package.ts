/**
 * Fuzzes `package verify` against GNU tar with more cases than CI runs:
 * seeded hostile archives (test/support/hostile-tar.ts); every archive that
 * verify accepts must unpack with GNU tar to exactly the manifest's files.
 *
 *   node --import ./bench/support/register-ts.js scripts/fuzz-package.ts --cases 100000 --seed 1
 *
 * Prints a summary and, for each failure, its seed and how the archive was
 * made; exits 1 when there is a failure. Replay one case with
 * `--cases 1 --seed <seed>`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runDifferential } from '../test/support/tar-differential.js';

const { values } = parseArgs({
  options: { cases: { type: 'string', default: '10000' }, seed: { type: 'string', default: '1' } },
});
const cases = Number(values.cases);
const first = Number(values.seed);
if (!Number.isSafeInteger(cases) || cases < 1 || !Number.isSafeInteger(first) || first < 0) {
  console.error('usage: fuzz-package.ts --cases N --seed S (positive integers)');
  process.exit(2);
}

const work = await mkdtemp(join(tmpdir(), 'edgeadm-fuzz-package-'));
const started = Date.now();
try {
  const report = await runDifferential({ first, cases, workDir: work });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`${report.cases} archives (seeds ${first}…${first + cases - 1}) in ${seconds} s`);
  console.log(`accepted by verify and checked against GNU tar: ${report.accepted}`);
  console.log(`refused: ${JSON.stringify(report.refused)}`);
  for (const failure of report.failures) {
    console.log(`FAIL seed ${failure.seed}: ${failure.problem}\n  made by: ${failure.steps.join('; ')}`);
  }
  console.log(report.failures.length === 0 ? 'no difference found' : `${report.failures.length} failures`);
  process.exitCode = report.failures.length === 0 ? 0 : 1;
} finally {
  await rm(work, { recursive: true, force: true });
}
