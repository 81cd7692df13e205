/**
 * The TypeScript example (examples/rollout.ts) against a REAL hub: `hub
 * serve`, two edge clusters (SIMULATED API servers) registered with
 * `register-cloud --foreground`, a cluster property set with the CLI, the
 * example run with Node, each cluster's copy checked with the real kubectl
 * through the hub, and `hub rollout status --json` read at the end.
 *
 * Skipped, by the condition below, only while this tree has no hub side of
 * the rollout API (src/hub/api/rollout-api.ts, which api.ts names as the
 * implementation); the same example runs against a fake operator API in
 * test/integration/cli/typescript-api.test.ts meanwhile. It needs the
 * agent's side too (the tunnel agent applying copies) and the simulated API
 * server's workload controllers (Deployments become available); with the
 * hub's and the agent's rollout work in the tree it passes.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HUB_ADMIN_USER } from '../../../src/hub/identity/authenticate.js';
import type { RolloutStatusView } from '../../../src/rollout/api.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { REPO_ROOT, runCli } from '../../support/cli.js';
import {
  createHubToken,
  hubJson,
  kubectlVia,
  registerAndRun,
  startEdgeCluster,
  startHubProcess,
  type EdgeCluster,
  type HubProcess,
} from './hub-fixture.js';
import { printedBy } from '../../support/run-output.js';

/** True once the hub serves the rollout routes of src/rollout/api.ts. */
const HUB_SERVES_ROLLOUT_API = existsSync(join(REPO_ROOT, 'src/hub/api/rollout-api.ts'));

describe.skipIf(!HUB_SERVES_ROLLOUT_API)('the TypeScript example against a real hub', () => {
  let hub: HubProcess;
  let eu: EdgeCluster;
  let plain: EdgeCluster;

  beforeAll(async () => {
    ensureCliBuilt('api.js', ['src']);
    hub = await startHubProcess();
    eu = await startEdgeCluster('shop-eu');
    plain = await startEdgeCluster('shop-plain');
    // Each cluster's own RBAC decides what a hub user may do there; the admin's rollout writes as the admin.
    for (const cluster of [eu, plain]) {
      cluster.api.setObject({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'hub-admin' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: HUB_ADMIN_USER }],
      });
    }
    const token = await createHubToken(hub);
    await registerAndRun({ hub, token, cluster: eu, labels: 'env=demo,region=eu' });
    await registerAndRun({ hub, token, cluster: plain, labels: 'env=demo' });
    const set = await runCli([
      'hub',
      'clusters',
      'set-properties',
      'shop-eu',
      'tag=2.0.0',
      '--hub-config',
      hub.adminConfig,
    ]);
    expect(set.exitCode, printedBy(set)).toBe(0);
  });

  afterAll(async () => {
    await eu?.agent?.stop();
    await plain?.agent?.stop();
    await hub?.stop();
    await eu?.api.stop();
    await plain?.api.stop();
  });

  it('rolls out with per-cluster values, completes, and status shows every cluster ready', async () => {
    const run = await execa(process.execPath, [join(REPO_ROOT, 'examples/rollout.ts'), 'env=demo'], {
      cwd: REPO_ROOT,
      reject: false,
      env: { EDGEADM_HUB_CONFIG: hub.adminConfig },
    });
    if (run.exitCode !== 0) {
      // The per-cluster rows say why (the failure message of each copy).
      const rows = await runCli([
        'hub',
        'rollout',
        'status',
        'example-web',
        '--clusters',
        '--hub-config',
        hub.adminConfig,
      ]);
      expect.fail(`the example exited ${run.exitCode}:\n${String(run.stdout)}${String(run.stderr)}\n${rows.stdout}`);
    }
    expect(String(run.stdout)).toMatch(/^complete: /m);

    for (const [cluster, region, tag] of [
      [eu, 'eu', '2.0.0'],
      [plain, 'unknown', '1.0.0'],
    ] as const) {
      const configMap = await kubectlVia(hub.adminConfig, cluster.name, ['get', 'configmap', 'site', '-o', 'json']);
      expect(configMap.exitCode, printedBy(configMap)).toBe(0);
      expect((JSON.parse(configMap.stdout) as { data: unknown }).data).toEqual({ site: cluster.name, region });
      const deployment = await kubectlVia(hub.adminConfig, cluster.name, [
        'get',
        'deployment',
        'web',
        '-o',
        'jsonpath={.spec.template.spec.containers[0].image}',
      ]);
      expect(deployment.stdout).toBe(`registry.example.com/web:${tag}`);
    }

    const status = await hubJson<RolloutStatusView>(['hub', 'rollout', 'status', 'example-web'], hub.adminConfig);
    expect(status).toMatchObject({ state: 'complete', counts: { ready: 2, failed: 0 } });
  });
});
