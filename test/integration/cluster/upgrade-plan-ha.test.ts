/**
 * `edgeadm upgrade plan` on an HA control plane whose servers run different
 * versions, as a rolling upgrade interrupted half way leaves them, through
 * the CLI on netns+sshd test hosts with the SIMULATED k3s
 * (test/support/sim-k3s, not k3s). The servers join with packages of
 * different versions, and each reports its own binary's version on its
 * Node (k3s runs its API server and kubelet from one binary).
 *
 * v1.31.4 + v1.32.1 + v1.31.4: the plan to v1.32.1 finds the second server
 * done and upgrades the others, the one edgeadm reached first; v1.33.0 is
 * refused for the servers that would skip v1.32. A fourth server at v1.30.2
 * puts the API servers two minors apart: every plan is refused with that
 * rule.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpgradePlanResult } from '../../../src/cluster/upgrade/plan.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import type { BuiltPackage } from '../../../src/packages/build.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCli, json, printedJoinArgs, sshArgs } from '../../support/cluster-cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

const CLI_TIMEOUT_MS = 240_000;
const TEST_TIMEOUT_MS = 600_000;
/** How long a joined server's Node may take to register with its version. */
const NODE_WAIT_MS = 60_000;
const CERTIFICATE_KEY = 'a'.repeat(64);
const V31 = 'v1.31.4+k3s1';
const V32 = 'v1.32.1+k3s1';
const V33 = 'v1.33.0+k3s1';
const V30 = 'v1.30.2+k3s1';

let env: TestHosts;
let home: string;
let joinCommand = '';
const packages = new Map<string, BuiltPackage>();

const edgeadm = (args: string[]): Promise<CliResult> => clusterCli(home, CLI_TIMEOUT_MS)(args);
const server = (index: number): TestHost => env.targets[index]!;

function errorOf(run: CliResult): { code: string; message: string; details?: { plan?: UpgradePlanResult } } {
  return (
    JSON.parse(run.stdout) as { error: { code: string; message: string; details?: { plan?: UpgradePlanResult } } }
  ).error;
}

/** Waits until `count` Nodes report a kubelet version (a joined server registers its Node after it serves). */
async function waitForNodes(count: number): Promise<void> {
  const client = new KubeClient(
    await kubeCredentialsOf(readFileSync(join(home, 'admin.yaml'), 'utf8'), { what: 'admin' }),
  );
  const deadline = Date.now() + NODE_WAIT_MS;
  for (;;) {
    const nodes = await client.list<{ status?: { nodeInfo?: { kubeletVersion?: string } } }>('/api/v1/nodes');
    if (nodes.length === count && nodes.every((node) => node.status?.nodeInfo?.kubeletVersion)) return;
    if (Date.now() > deadline) throw new Error(`expected ${count} Nodes with versions, got ${JSON.stringify(nodes)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function joinServer(host: TestHost, version: string): Promise<void> {
  json(
    await edgeadm([
      ...printedJoinArgs(joinCommand),
      '--install-pkg-path',
      packages.get(version)!.file,
      '--control-plane',
      '--certificate-key',
      CERTIFICATE_KEY,
      '--json',
      ...sshArgs(env, host),
    ]),
  );
}

const plan = (version: string): Promise<CliResult> =>
  edgeadm(['upgrade', 'plan', ...sshArgs(env, server(0)), '--install-pkg-path', packages.get(version)!.file, '--json']);

beforeAll(async () => {
  ensureCliBuilt('commands/upgrade/plan.js', ['src', 'test/support/sim-k3s']);
  env = await startTestHosts({ count: 4 });
  home = mkdtempSync(join(env.dir, 'cli-home-'));
  const dir = mkdtempSync(join(env.dir, 'pkg-'));
  for (const version of [V30, V31, V32, V33]) {
    packages.set(version, await buildSimK3sPackage(dir, { kubernetesVersion: version }));
  }
  const init = json<{ controlPlaneJoinCommand: string }>(
    await edgeadm([
      'init',
      ...sshArgs(env, server(0)),
      '--install-pkg-path',
      packages.get(V31)!.file,
      '--control-plane-endpoint',
      server(0).address,
      '--upload-certs',
      '--certificate-key',
      CERTIFICATE_KEY,
      '--kubeconfig-out',
      join(home, 'admin.yaml'),
      '--json',
    ]),
  );
  joinCommand = init.controlPlaneJoinCommand;
  await joinServer(server(1), V32);
  await joinServer(server(2), V31);
  await waitForNodes(3);
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await env?.teardown();
});

describe('edgeadm upgrade plan on an HA control plane at mixed versions (simulated k3s)', () => {
  it(
    'plans the servers still behind, the reached one first, and finds the upgraded one done',
    async () => {
      const result = json<UpgradePlanResult>(await plan(V32));
      expect(result).toMatchObject({ isHa: true, controlPlanes: 3, nodes: 0 });
      expect(result.hosts.map((h) => [h.host, h.from, h.action, h.step])).toEqual([
        [server(0).name, V31, 'upgrade', 1],
        [server(1).name, V32, 'none', undefined],
        [server(2).name, V31, 'upgrade', 2],
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'refuses v1.33 for the servers that would skip v1.32, and not for the one at v1.32',
    async () => {
      const run = await plan(V33);
      expect(run.exitCode).toBe(2);
      const error = errorOf(run);
      expect(error.code).toBe('E_UPGRADE_SKEW');
      expect(error.details?.plan?.hosts.map((h) => [h.host, h.action, h.refusals.map((r) => r.rule)])).toEqual([
        [server(0).name, 'refused', ['control-plane-one-minor-at-a-time']],
        [server(1).name, 'upgrade', []],
        [server(2).name, 'refused', ['control-plane-one-minor-at-a-time']],
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'with a server two minors behind the newest, refuses every plan with the HA rule',
    async () => {
      await joinServer(server(3), V30);
      await waitForNodes(4);
      for (const version of [V32, V31]) {
        const run = await plan(version);
        expect(run.exitCode).toBe(2);
        const error = errorOf(run);
        expect(error.code).toBe('E_UPGRADE_SKEW');
        expect(error.message).toContain('(version skew policy: ha-api-servers-one-minor-apart)');
        expect(error.message).toContain('the cluster already breaks the policy');
      }
    },
    TEST_TIMEOUT_MS,
  );
});
