/**
 * Compares edgeadm's kubeconfig reading with the pinned `kubectl config view
 * --minify --raw --flatten` on more seeded cases than CI runs
 * (test/support/differential/kubeconfig-cases.ts):
 *
 *   node --import ./bench/support/register-ts.js scripts/fuzz-kubeconfigs.ts --cases 5000 --seed 100000
 *
 * Prints a summary and each difference with its smallest case; exits 1 when
 * there is one. Replay a seed with `--cases 1 --seed <seed>`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensurePinnedKubectl } from '../test/support/pinned-kubectl.js';
import { formatKubeFailure, runKubeconfigDifferential } from '../test/support/differential/kubeconfig-differential.js';

const { values } = parseArgs({
  options: { cases: { type: 'string', default: '2000' }, seed: { type: 'string', default: '100000' } },
});
const cases = Number(values.cases);
const first = Number(values.seed);
if (!Number.isSafeInteger(cases) || cases < 1 || !Number.isSafeInteger(first) || first < 0) {
  console.error('usage: fuzz-kubeconfigs.ts --cases N --seed S (positive integers)');
  process.exit(2);
}
const work = await mkdtemp(join(tmpdir(), 'edgeadm-fuzz-kubeconfigs-'));
const started = Date.now();
try {
  const report = await runKubeconfigDifferential({
    kubectl: ensurePinnedKubectl(),
    first,
    cases,
    workDir: work,
    maxShrunk: 5,
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`${report.cases} kubeconfig sets (seeds ${first}…${first + cases - 1}) in ${seconds} s`);
  console.log(`refused by kubectl (and edgeadm): ${report.errors}`);
  for (const failure of report.failures) console.log(`FAIL ${formatKubeFailure(failure)}`);
  console.log(report.failures.length === 0 ? 'no difference found' : `${report.failures.length} differences`);
  process.exitCode = report.failures.length === 0 ? 0 : 1;
} finally {
  await rm(work, { recursive: true, force: true });
}
