/**
 * `edgeadm fleet upgrade` with the **simulated** kubeadm distribution
 * (test/support/sim-kubeadm: stand-in kubeadm, kubelet and containerd, not
 * Kubernetes), as operators run it: the CLI as a subprocess over 10 test
 * hosts (a control plane and 9 nodes), set up at v1.31 by `fleet up`. One
 * harness serves the tests of the file, in order:
 *
 * 1. v1.31 → v1.32 with one node that cannot be drained (a bare Pod on it,
 *    which the drain refuses without --force): the control plane (`kubeadm
 *    upgrade apply`) and 8 nodes (`kubeadm upgrade node`, the kubelet) are
 *    upgraded, the failing node is reported (phase drain), still at its old
 *    version and cordoned; once the Pod is gone, `--resume last` upgrades it
 *    alone and every Node reports v1.32, uncordoned; a last run finds every
 *    host done.
 * 2. v1.32 → v1.33 with `--limit`: the control plane alone, then one node
 *    alone (the control plane is not in that run, and is still the one the
 *    node is drained through); the other nodes are not touched.
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
import { printedBy } from '../../support/run-output.js';

const NODE_COUNT = 9;
const CLI_TIMEOUT_MS = 420_000;
const TEST_TIMEOUT_MS = 900_000;
const VERSIONS = { old: 'v1.31.4', next: 'v1.32.1', last: 'v1.33.0' };
/** The node made to fail (1-based). */
const FAILING = 5;

let env: TestHosts;
let home: string;
let inventory: string;
let adminKubeconfig: string;
const packages = new Map<string, string>();
let controlPlane: TestHost;
let nodes: TestHost[];

const nodeName = (index: number): string => `store-${String(index + 1).padStart(2, '0')}`;

async function edgeadm(args: string[]): Promise<CliResult> {
  return runCli([...args, '--ssh-known-hosts', env.knownHostsFile, '--json'], {
    env: { HOME: home, EDGEADM_HOME: join(home, '.edgeadm'), SSH_AUTH_SOCK: '', EDGEADM_SERVICE_MANAGER: 'direct' },
    timeoutMs: CLI_TIMEOUT_MS,
  });
}

function upgrade(version: string, extra: string[] = []): Promise<CliResult> {
  return edgeadm(['fleet', 'upgrade', '-i', inventory, '--install-pkg-path', packages.get(version)!, ...extra]);
}

function resultOf(run: CliResult): FleetUpgradeResult {
  try {
    return JSON.parse(run.stdout) as FleetUpgradeResult;
  } catch {
    throw new Error(`fleet upgrade printed no JSON (exit ${run.exitCode}):\n${run.stdout}\n${run.stderr}`);
  }
}

/** Each Node's kubelet version, with ` cordoned` when it is unschedulable, by host name. */
async function kubeletVersions(): Promise<Map<string, string>> {
  const client = new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
  const listed = await client.list<{
    metadata: { name: string };
    spec?: { unschedulable?: boolean };
    status?: { nodeInfo?: { kubeletVersion?: string } };
  }>('/api/v1/nodes');
  return new Map(
    listed.map((n) => [
      n.metadata.name,
      `${n.status?.nodeInfo?.kubeletVersion ?? ''}${n.spec?.unschedulable === true ? ' cordoned' : ''}`,
    ]),
  );
}

beforeAll(async () => {
  ensureCliBuilt('commands/fleet/upgrade.js', ['src', 'test/support/sim-kubeadm', 'test/support/sim-apiserver']);
  env = await startTestHosts({ count: NODE_COUNT + 1 });
  [controlPlane, ...nodes] = env.targets as [TestHost, ...TestHost[]];
  home = mkdtempSync(join(env.dir, 'fleet-upgrade-kubeadm-'));
  adminKubeconfig = join(home, 'admin.yaml');
  const dir = mkdtempSync(join(env.dir, 'pkg-'));
  for (const version of Object.values(VERSIONS)) {
    packages.set(version, (await buildSimKubeadmPackage(dir, { kubernetesVersion: version })).file);
  }
  inventory = join(home, 'inventory.yaml');
  writeFileSync(
    inventory,
    [
      'kind: FleetInventory',
      `package: ${packages.get(VERSIONS.old)}`,
      `ssh: { user: root, keyFile: ${env.keys.root} }`,
      'controlPlane:',
      '  hosts:',
      `    cp: { address: ${controlPlane.address} }`,
      'nodeGroups:',
      '  stores:',
      '    hosts:',
      ...nodes.map((node, index) => `      ${nodeName(index)}: { address: ${node.address} }`),
      '',
    ].join('\n'),
  );
  const up = await edgeadm(['fleet', 'up', '-i', inventory, '--kubeconfig-out', adminKubeconfig, '--concurrency', '5']);
  expect(up.exitCode, printedBy(up)).toBe(0);
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await env?.teardown();
});

describe('edgeadm fleet upgrade over 10 hosts (simulated kubeadm)', () => {
  it(
    'upgrades the control plane, then the nodes; a node whose drain is refused is reported, cordoned at its old version, and --resume completes it; a last run finds every host done',
    async () => {
      const failing = nodes[FAILING - 1]!;
      const admin = new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
      expect([...(await kubeletVersions()).values()]).toEqual(
        Array.from({ length: NODE_COUNT + 1 }, () => VERSIONS.old),
      );
      await admin.create('/api/v1/namespaces/default/pods', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'bare' },
        spec: { nodeName: failing.name, containers: [{ name: 'c', image: 'registry.example/bare:1' }] },
      });
      const run = await upgrade(VERSIONS.next, ['--concurrency', '4']);
      expect(run.exitCode, printedBy(run)).toBe(1);
      const result = resultOf(run);
      expect(result.target).toBe(VERSIONS.next);
      expect(result.hosts[0]).toMatchObject({ host: 'cp', status: 'done', outcome: 'upgraded', from: VERSIONS.old });
      const failed = result.hosts.filter((h) => h.status === 'failed');
      expect(failed.map((h) => h.host)).toEqual([nodeName(FAILING - 1)]);
      expect(failed[0]).toMatchObject({ phase: 'drain', error: { code: 'E_DRAIN_REFUSED' } });
      expect(failed[0]!.error!.message).toContain('default/bare declares no controller');
      expect(result.hosts.filter((h) => h.status === 'done')).toHaveLength(NODE_COUNT);
      let versions = await kubeletVersions();
      // Nothing swapped: the old version runs; cordoned until the drain can finish.
      expect(versions.get(failing.name)).toBe(`${VERSIONS.old} cordoned`);
      expect([...versions].filter(([name]) => name !== failing.name).every(([, v]) => v === VERSIONS.next)).toBe(true);

      await admin.delete('/api/v1/namespaces/default/pods/bare');
      const resumed = await upgrade(VERSIONS.next, ['--resume', 'last']);
      expect(resumed.exitCode, printedBy(resumed)).toBe(0);
      const completed = resultOf(resumed);
      expect(completed.runId).toBe(result.runId);
      expect(completed.hosts.every((h) => h.status === 'done')).toBe(true);
      // Only the failed node ran again: the others kept their one attempt.
      expect(completed.hosts.filter((h) => h.attempts > 1).map((h) => h.host)).toEqual([nodeName(FAILING - 1)]);
      versions = await kubeletVersions();
      expect([...versions.values()]).toEqual(Array.from({ length: NODE_COUNT + 1 }, () => VERSIONS.next));

      const again = resultOf(await upgrade(VERSIONS.next, ['--concurrency', '5']));
      expect(again.hosts.map((h) => h.outcome)).toEqual(Array.from({ length: NODE_COUNT + 1 }, () => 'already-done'));
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'with --limit, upgrades the control plane alone, then one node alone through it; the other nodes are not touched',
    async () => {
      const alone = await upgrade(VERSIONS.last, ['--limit', 'cp']);
      expect(alone.exitCode, printedBy(alone)).toBe(0);
      expect(resultOf(alone).hosts.map((h) => [h.host, h.outcome])).toEqual([['cp', 'upgraded']]);
      // --limit to one node: the control plane is not in the run, and the node still goes through it.
      const limited = await upgrade(VERSIONS.last, ['--limit', nodeName(0)]);
      expect(limited.exitCode, printedBy(limited)).toBe(0);
      expect(resultOf(limited).hosts.map((h) => [h.host, h.outcome])).toEqual([[nodeName(0), 'upgraded']]);
      const versions = await kubeletVersions();
      expect(versions.get(controlPlane.name)).toBe(VERSIONS.last);
      expect(versions.get(nodes[0]!.name)).toBe(VERSIONS.last);
      expect(nodes.slice(1).map((node) => versions.get(node.name))).toEqual(
        Array.from({ length: NODE_COUNT - 1 }, () => VERSIONS.next),
      );
    },
    TEST_TIMEOUT_MS,
  );
});
