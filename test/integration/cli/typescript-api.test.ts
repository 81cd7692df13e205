/**
 * The TypeScript API (`import { … } from 'edgeadm'`, src/api.ts as the
 * package's main entry) and its example, examples/rollout.ts: the example
 * type-checks against the declarations the build publishes (lib/api.d.ts,
 * through package.json `exports`, as a user's project resolves it) and runs
 * with Node against a FAKE operator API (test/support/fake-operator-api.ts).
 * The same example against a real hub: test/integration/hub/rollout-example.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHub, ValidationError } from '../../../src/api.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { REPO_ROOT } from '../../support/cli.js';
import { startFakeOperatorApi, type FakeOperatorApi } from '../../support/fake-operator-api.js';

let fake: FakeOperatorApi;

beforeAll(async () => {
  ensureCliBuilt('api.js', ['src']);
  fake = await startFakeOperatorApi();
});
afterAll(() => fake.close());

describe("edgeadm's TypeScript API", () => {
  it('the example type-checks against the published declarations', () => {
    // Throws with tsc's diagnostics on any type error.
    execFileSync(
      process.execPath,
      [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'examples/tsconfig.json'],
      {
        cwd: REPO_ROOT,
        stdio: 'pipe',
      },
    );
  });

  it('the example applies its Rollout, follows it to the end and prints the summaries', async () => {
    const run = execa(process.execPath, [join(REPO_ROOT, 'examples/rollout.ts'), 'env=demo'], {
      cwd: REPO_ROOT,
      reject: false,
      env: { EDGEADM_HUB_CONFIG: fake.hubConfigPath },
    });
    while (!fake.requests.some((r) => r.path.startsWith('/hub/v1/rollouts/example-web?waitForChangeFrom='))) {
      if (run.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    fake.setStatus('example-web', {
      state: 'complete',
      waves: [{ index: 0, clusters: 1, state: 'done', counts: fake.rollouts.get('example-web')!.view.counts }],
      summaries: [{ name: 'min-available', value: 1, reporting: 3 }],
    });
    const result = await run;
    expect(result.exitCode, String(result.stderr)).toBe(0);
    expect(String(result.stdout)).toContain('rollout example-web: revision 1\n');
    expect(String(result.stdout)).toContain('complete: wave 1/1');
    expect(String(result.stdout)).toContain('summary min-available = 1 (3 reporting)');
    const placement = (fake.rollouts.get('example-web')!.document['spec'] as { placement: unknown }).placement;
    expect(placement).toEqual({ clusterSelector: 'env=demo' });
  });

  it('checks a document before any request, naming the field', async () => {
    const before = fake.connections();
    const hub = connectHub(fake.hubConfigPath);
    const error = await hub.rollouts
      .apply({ apiVersion: 'edgeadm.io/v1alpha1', kind: 'Rollout', metadata: { name: 'Bad_Name' }, spec: {} })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).message).toContain('Rollout metadata.name');
    expect(fake.connections()).toBe(before);
  });

  it('connects from a config object and drives rollouts and clusters', async () => {
    const hub = connectHub(fake.hubConfig);
    await hub.rollouts.apply({
      apiVersion: 'edgeadm.io/v1alpha1',
      kind: 'Rollout',
      metadata: { name: 'api-ops' },
      spec: {
        placement: { clusters: ['store-1'] },
        resources: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'x' } }],
      },
    });
    expect((await hub.rollouts.pause('api-ops')).state).toBe('paused');
    expect((await hub.rollouts.resume('api-ops')).state).toBe('progressing');
    expect((await hub.rollouts.abort('api-ops')).state).toBe('aborted');
    expect((await hub.rollouts.status('api-ops')).state).toBe('aborted');
    await hub.clusters.hold('store-1', 'inventory day');
    expect(fake.holds.get('store-1')?.reason).toBe('inventory day');
  });
});
