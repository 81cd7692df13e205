/**
 * `edgeadm fleet upgrade` as operators run it: the CLI as a subprocess over
 * 10 test hosts (a control plane and 9 nodes) with the **simulated** k3s
 * (test/support/sim-k3s, not k3s), set up by `fleet up` at v1.31. One
 * harness serves the tests of the file, in order:
 *
 * 1. v1.31 → v1.32 with one node that cannot be drained (a bare Pod on it,
 *    which the drain refuses without --force): the control plane and 8 nodes
 *    are upgraded, the failing node is reported (phase drain), still at its
 *    old version and cordoned; once the Pod is gone, `--resume last`
 *    upgrades it alone, and every Node reports v1.32, uncordoned.
 * 2. v1.32 → v1.33 in a maintenance window, the clock injected through
 *    `EDGEADM_TEST_CLOCK_FILE` (a test-only variable, see src/cli/test-clock.ts):
 *    the window closes while a node is upgraded; that node finishes, no other
 *    starts, the run says when the window opens again; `--resume` then,
 *    inside the next window, completes it.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetUpgradeResult } from '../../../src/fleet/fleet-upgrade.js';
import type { RunState } from '../../../src/fleet/run-state.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli, type CliResult } from '../../support/cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

const NODE_COUNT = 9;
const CLI_TIMEOUT_MS = 420_000;
const TEST_TIMEOUT_MS = 600_000;
/** Bound on waiting for a run to reach a state (polled, not raced). */
const STATE_WAIT_MS = 300_000;
const STATE_POLL_MS = 100;
const VERSIONS = { old: 'v1.31.4+k3s1', next: 'v1.32.1+k3s1', last: 'v1.33.0+k3s1' };
/** The node made to fail (1-based). */
const FAILING = 5;

let env: TestHosts;
let home: string;
let inventory: string;
let adminKubeconfig: string;
let clockFile: string;
const packages = new Map<string, string>();
let controlPlane: TestHost;
let nodes: TestHost[];

const nodeName = (index: number): string => `store-${String(index + 1).padStart(2, '0')}`;

async function edgeadm(args: string[], extraEnv: Record<string, string> = {}): Promise<CliResult> {
  return runCli(args, {
    env: {
      HOME: home,
      EDGEADM_HOME: join(home, '.edgeadm'),
      SSH_AUTH_SOCK: '',
      EDGEADM_SERVICE_MANAGER: 'direct',
      ...extraEnv,
    },
    timeoutMs: CLI_TIMEOUT_MS,
  });
}

function upgrade(version: string, extra: string[] = [], extraEnv: Record<string, string> = {}): Promise<CliResult> {
  return edgeadm(
    [
      'fleet',
      'upgrade',
      '-i',
      inventory,
      '--ssh-known-hosts',
      env.knownHostsFile,
      '--install-pkg-path',
      packages.get(version)!,
      '--json',
      ...extra,
    ],
    extraEnv,
  );
}

function resultOf(run: CliResult): FleetUpgradeResult {
  try {
    return JSON.parse(run.stdout) as FleetUpgradeResult;
  } catch {
    throw new Error(`fleet upgrade printed no JSON (exit ${run.exitCode}):\n${run.stdout}\n${run.stderr}`);
  }
}

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

/** Waits until the newest run's state satisfies `isReached`. */
async function untilRunState(isReached: (state: RunState) => boolean): Promise<void> {
  const runs = join(home, '.edgeadm', 'fleet', 'runs');
  const deadline = Date.now() + STATE_WAIT_MS;
  for (;;) {
    const newest = existsSync(runs) ? readdirSync(runs).sort().at(-1) : undefined;
    const file = newest === undefined ? undefined : join(runs, newest, 'state.json');
    if (file !== undefined && existsSync(file)) {
      try {
        if (isReached(JSON.parse(readFileSync(file, 'utf8')) as RunState)) return;
      } catch {
        // Renamed into place as it is read: ask again.
      }
    }
    if (Date.now() > deadline) throw new Error('the run did not reach the awaited state');
    await new Promise((resolve) => setTimeout(resolve, STATE_POLL_MS));
  }
}

beforeAll(async () => {
  ensureCliBuilt('commands/fleet/upgrade.js', ['src', 'test/support/sim-k3s', 'test/support/sim-apiserver']);
  env = await startTestHosts({ count: NODE_COUNT + 1 });
  [controlPlane, ...nodes] = env.targets as [TestHost, ...TestHost[]];
  home = mkdtempSync(join(env.dir, 'fleet-upgrade-home-'));
  adminKubeconfig = join(home, 'admin.yaml');
  clockFile = join(home, 'clock');
  const dir = mkdtempSync(join(env.dir, 'pkg-'));
  for (const version of Object.values(VERSIONS)) {
    packages.set(version, (await buildSimK3sPackage(dir, { kubernetesVersion: version })).file);
  }
  inventory = join(home, 'inventory.yaml');
  writeFileSync(
    inventory,
    [
      'kind: FleetInventory',
      `package: ${packages.get(VERSIONS.old)}`,
      'ssh:',
      '  user: root',
      `  keyFile: ${env.keys.root}`,
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
  const up = await edgeadm([
    'fleet',
    'up',
    '-i',
    inventory,
    '--ssh-known-hosts',
    env.knownHostsFile,
    '--kubeconfig-out',
    adminKubeconfig,
    '--concurrency',
    '5',
    '--json',
  ]);
  expect(up.exitCode, printedBy(up)).toBe(0);
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await env?.teardown();
});

describe('edgeadm fleet upgrade over 10 hosts (simulated k3s)', () => {
  it(
    'upgrades the control plane, then the nodes; a node whose drain is refused is reported, cordoned at its old version, and --resume completes it',
    async () => {
      const failing = nodes[FAILING - 1]!;
      const admin = new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
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
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'stops starting hosts when the maintenance window closes (the running one finishes) and says when to --resume',
    async () => {
      writeFileSync(clockFile, '2026-11-24T22:30:00Z\n');
      const clock = { EDGEADM_TEST_CLOCK_FILE: clockFile };
      const window = ['--window-start', '22:00', '--window-end', '23:00'];
      const running = upgrade(VERSIONS.last, [...window, '--concurrency', '1'], clock);
      // Once the control plane is done and a node is being upgraded, the window closes.
      await untilRunState(
        (state) =>
          state.command === 'upgrade' &&
          state.hosts.cp?.status === 'done' &&
          Object.entries(state.hosts).some(([name, host]) => name !== 'cp' && host.status === 'running'),
      );
      writeFileSync(clockFile, '2026-11-24T23:30:00Z\n');
      const run = await running;
      expect(run.exitCode, printedBy(run)).toBe(1);
      const result = resultOf(run);
      expect(result).toMatchObject({ stopReason: 'maintenance-window', resumeAt: '2026-11-25T22:00:00.000Z' });
      const done = result.hosts.filter((h) => h.status === 'done');
      const skipped = result.hosts.filter((h) => h.status === 'skipped');
      // The node running when the window closed finished; none failed; the rest never started.
      expect(done.length).toBeGreaterThanOrEqual(2);
      expect(done.length + skipped.length).toBe(NODE_COUNT + 1);
      expect(skipped.every((h) => h.attempts === 0)).toBe(true);
      expect(skipped[0]!.error?.message).toContain('opens again at 2026-11-25T22:00:00.000Z');
      const versions = await kubeletVersions();
      for (const host of skipped) expect(versions.get(nodes[Number(host.host.slice(6)) - 1]!.name)).toBe(VERSIONS.next);

      writeFileSync(clockFile, '2026-11-25T22:05:00Z\n');
      const resumed = await upgrade(VERSIONS.last, [...window, '--concurrency', '4', '--resume', 'last'], clock);
      expect(resumed.exitCode, printedBy(resumed)).toBe(0);
      expect(resultOf(resumed).hosts.every((h) => h.status === 'done')).toBe(true);
      expect([...(await kubeletVersions()).values()]).toEqual(
        Array.from({ length: NODE_COUNT + 1 }, () => VERSIONS.last),
      );
    },
    TEST_TIMEOUT_MS,
  );
});
