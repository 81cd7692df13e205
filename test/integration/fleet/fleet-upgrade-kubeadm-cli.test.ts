/**
 * `edgeadm fleet upgrade` with the **simulated** kubeadm distribution
 * (test/support/sim-kubeadm: stand-in kubeadm, kubelet and containerd, not
 * Kubernetes) on three test hosts: the control plane is set up at v1.32 and
 * the nodes at v1.31 by `fleet up` (upgrade apply upgrades k3s control
 * planes only here, so the run finds the control plane done), and `fleet
 * upgrade` brings the nodes to v1.32 (kubeadm, `kubeadm upgrade node`, the
 * kubelet): first one node alone (`--limit`: the control plane is not in the
 * run, and is still the one the node is drained through), then the rest; a
 * last run finds every host done.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetUpgradeResult } from '../../../src/fleet/fleet-upgrade.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli, type CliResult } from '../../support/cli.js';
import { buildSimKubeadmPackage } from '../../support/sim-kubeadm/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

const CLI_TIMEOUT_MS = 420_000;
const TEST_TIMEOUT_MS = 600_000;
const VERSIONS = { old: 'v1.31.4', next: 'v1.32.1' };

let env: TestHosts;
let home: string;
let inventory: string;
let adminKubeconfig: string;
let next: string;

async function edgeadm(args: string[]): Promise<CliResult> {
  return runCli([...args, '--ssh-known-hosts', env.knownHostsFile, '--json'], {
    env: { HOME: home, EDGEADM_HOME: join(home, '.edgeadm'), SSH_AUTH_SOCK: '', EDGEADM_SERVICE_MANAGER: 'direct' },
    timeoutMs: CLI_TIMEOUT_MS,
  });
}

async function kubeletVersions(): Promise<string[]> {
  const client = new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
  const nodes = await client.list<{ status?: { nodeInfo?: { kubeletVersion?: string } } }>('/api/v1/nodes');
  return nodes.map((n) => n.status?.nodeInfo?.kubeletVersion ?? '');
}

beforeAll(async () => {
  ensureCliBuilt('commands/fleet/upgrade.js', ['src', 'test/support/sim-kubeadm', 'test/support/sim-apiserver']);
  env = await startTestHosts({ count: 3 });
  const [controlPlane, ...nodes] = env.targets as [TestHost, ...TestHost[]];
  home = mkdtempSync(join(env.dir, 'fleet-upgrade-kubeadm-'));
  adminKubeconfig = join(home, 'admin.yaml');
  const dir = mkdtempSync(join(env.dir, 'pkg-'));
  const old = (await buildSimKubeadmPackage(dir, { kubernetesVersion: VERSIONS.old })).file;
  next = (await buildSimKubeadmPackage(dir, { kubernetesVersion: VERSIONS.next })).file;
  inventory = join(home, 'inventory.yaml');
  writeFileSync(
    inventory,
    [
      'kind: FleetInventory',
      `package: ${old}`,
      `ssh: { user: root, keyFile: ${env.keys.root} }`,
      'controlPlane:',
      '  hosts:',
      `    cp: { address: ${controlPlane.address}, package: ${next} }`,
      'nodeGroups:',
      '  stores:',
      '    hosts:',
      ...nodes.map((node, index) => `      store-${index + 1}: { address: ${node.address} }`),
      '',
    ].join('\n'),
  );
  const up = await edgeadm(['fleet', 'up', '-i', inventory, '--kubeconfig-out', adminKubeconfig]);
  expect(up.exitCode, up.stderr).toBe(0);
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await env?.teardown();
});

describe('edgeadm fleet upgrade (simulated kubeadm)', () => {
  it(
    'upgrades a node alone with --limit, then finds the control plane and that node done and upgrades the other; a last run finds every host done',
    async () => {
      expect((await kubeletVersions()).sort()).toEqual([VERSIONS.old, VERSIONS.old, VERSIONS.next]);
      // --limit to one node: the control plane is not in the run, and the node still goes through it.
      const limited = await edgeadm([
        'fleet',
        'upgrade',
        '-i',
        inventory,
        '--install-pkg-path',
        next,
        '--limit',
        'store-1',
      ]);
      expect(limited.exitCode, limited.stderr).toBe(0);
      expect((JSON.parse(limited.stdout) as FleetUpgradeResult).hosts.map((h) => [h.host, h.outcome])).toEqual([
        ['store-1', 'upgraded'],
      ]);
      const run = await edgeadm(['fleet', 'upgrade', '-i', inventory, '--install-pkg-path', next]);
      expect(run.exitCode, run.stderr).toBe(0);
      const result = JSON.parse(run.stdout) as FleetUpgradeResult;
      expect(result.hosts.map((h) => [h.host, h.status, h.outcome])).toEqual([
        ['cp', 'done', 'already-done'],
        ['store-1', 'done', 'already-done'],
        ['store-2', 'done', 'upgraded'],
      ]);
      expect(await kubeletVersions()).toEqual([VERSIONS.next, VERSIONS.next, VERSIONS.next]);
      const again = JSON.parse(
        (await edgeadm(['fleet', 'upgrade', '-i', inventory, '--install-pkg-path', next])).stdout,
      ) as FleetUpgradeResult;
      expect(again.hosts.map((h) => h.outcome)).toEqual(['already-done', 'already-done', 'already-done']);
    },
    TEST_TIMEOUT_MS,
  );
});
