/**
 * edgeadm reads kubeconfigs as kubectl does: 250 seeded sets of kubeconfig
 * files (KUBECONFIG lists, relative certificate paths, current-context and
 * --context, namespaces, -data beside paths, tls-server-name, proxy-url,
 * exec and auth-provider users) read by edgeadm's resolveKubeconfigView and
 * by the pinned `kubectl config view --minify --raw --flatten`, compared
 * field by field. Any difference fails with the smallest case that still
 * shows it. scripts/fuzz-kubeconfigs.ts runs more seeds.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensurePinnedKubectl } from '../../support/pinned-kubectl.js';
import { formatKubeFailure, runKubeconfigDifferential } from '../../support/differential/kubeconfig-differential.js';

describe('kubeconfig: edgeadm against kubectl config view --minify --raw --flatten', () => {
  let work: string;
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'kubeconfig-differential-'));
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it('250 generated kubeconfig sets select the same context, cluster and user, or both refuse them', async () => {
    const report = await runKubeconfigDifferential({
      kubectl: ensurePinnedKubectl(),
      first: 1,
      cases: 250,
      workDir: work,
    });
    const shown = report.failures.map(formatKubeFailure).join('\n');
    expect(report.failures, shown).toEqual([]);
    expect(report.errors).toBeLessThan(report.cases * 0.6);
  }, 240_000);
});
