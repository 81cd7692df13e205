/**
 * `fleet up` with three control-plane hosts and three nodes, as operators run
 * it: the CLI as a subprocess, the **simulated** k3s (`test/support/sim-k3s`,
 * not k3s), the nodes behind a bastion and the control planes dual-homed (as
 * in a datacenter). The harness has no load balancer, so the inventory names
 * the first control plane's address as the control-plane endpoint, written
 * out as the inventory must. One harness serves every test of the file, in
 * order:
 *
 * 1. `fleet up --dry-run` shows the init, the control-plane joins one by one
 *    and the node waves; an inventory without the endpoint is refused with
 *    its line;
 * 2. `fleet up` with the third control plane unfit (its kubelet port taken):
 *    the second joins, the third fails preflight, and no node starts;
 *    neither the certificate key nor the join token reaches the output, the
 *    state file or the host logs;
 * 3. `--resume last` once it is fixed: the finished control plane is not
 *    touched, the third joins, every node joins; the three are servers of
 *    one cluster;
 * 4. a re-run changes nothing;
 * 5. `fleet reset` over the inventory leaves every host as it was before.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetResetResult } from '../../../src/fleet/fleet-reset.js';
import type { FleetUpResult } from '../../../src/fleet/fleet-up.js';
import type { FleetUpDryRun } from '../../../src/commands/fleet/up.js';
import { hostLogPath } from '../../../src/fleet/run-state.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { listing } from '../../support/cluster-cli.js';
import {
  connectionCounts,
  connectionsSince,
  controlPlaneNodesByServer,
  fleetCliFor,
  runFiles,
  takeKubeletPort,
  type FleetCli,
} from '../../support/fleet-cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

const CONTROL_PLANE_COUNT = 3;
const NODE_COUNT = 3;
/** Bounds for one CLI run and one test on a busy 2-core machine. */
const CLI_TIMEOUT_MS = 300_000;
const TEST_TIMEOUT_MS = 600_000;
const SSH_TIMEOUT_SECONDS = '15';
/** Where fleet up keeps the certificate key on the first control plane. */
const CERTIFICATE_KEY_FILE = '/var/lib/edgeadm/state/fleet-certificate-key';

let env: TestHosts;
let home: string;
let pkg: string;
let controlPlanes: TestHost[];
let nodes: TestHost[];
let inventory: string;
let fleetCli: FleetCli;
let freeKubeletPort: () => Promise<void>;
const before = new Map<string, string>();

const cpName = (index: number): string => `cp${index + 1}`;
const nodeName = (index: number): string => `store-${index + 1}`;
const adminKubeconfig = (): string => join(home, 'admin.kubeconfig');

beforeAll(async () => {
  ensureCliBuilt('commands/fleet/up.js', ['src', 'test/support/sim-k3s']);
  env = await startTestHosts({
    count: 1 + CONTROL_PLANE_COUNT + NODE_COUNT,
    bastion: true,
    dualHomed: Array.from({ length: CONTROL_PLANE_COUNT }, (_, index) => index + 1),
  });
  controlPlanes = env.targets.slice(0, CONTROL_PLANE_COUNT);
  nodes = env.targets.slice(CONTROL_PLANE_COUNT);
  home = mkdtempSync(join(env.dir, 'fleet-ha-home-'));
  pkg = (await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
  inventory = writeInventory('inventory.yaml', controlPlanes[0]!.address);
  fleetCli = fleetCliFor(env, {
    home,
    timeoutMs: CLI_TIMEOUT_MS,
    sshTimeoutSeconds: SSH_TIMEOUT_SECONDS,
    adminKubeconfig: adminKubeconfig(),
  });
  for (const host of env.targets) before.set(host.name, await listing(env, host));
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

/** The fleet in edgeadm's format: three control planes with `endpoint`, three stores behind the bastion. */
function writeInventory(file: string, endpoint: string | undefined): string {
  const lines = [
    'kind: FleetInventory',
    `package: ${pkg}`,
    'ssh:',
    '  user: root',
    `  keyFile: ${env.keys.root}`,
    'controlPlane:',
    ...(endpoint === undefined ? [] : [`  endpoint: ${endpoint}`]),
    '  hosts:',
    ...controlPlanes.map((host, index) => `    ${cpName(index)}: { address: ${host.address} }`),
    'nodeGroups:',
    '  stores:',
    `    ssh: { jump: root@${env.bastion!.address} }`,
    '    hosts:',
    ...nodes.map((host, index) => `      ${nodeName(index)}: { address: ${host.address} }`),
  ];
  const path = join(home, file);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

const fleet = <T>(command: string, extra: string[], file = inventory) => fleetCli<T>(command, file, extra);

describe('edgeadm fleet up with three control planes (simulated k3s)', () => {
  it(
    'fleet up --dry-run shows the init, the control-plane joins one at a time and the node waves; no endpoint is refused with its line',
    async () => {
      const connectionsBefore = connectionCounts(env);
      const { run, result } = await fleet<FleetUpDryRun>('up', ['--dry-run', '--canary', '1']);
      expect(run.exitCode, run.stderr).toBe(0);
      const endpoint = controlPlanes[0]!.address;
      expect(result.hosts.map((entry) => [entry.host, entry.role, entry.wave])).toEqual([
        ['cp1', 'control-plane', 1],
        ['cp2', 'control-plane', 2],
        ['cp3', 'control-plane', 3],
        ['store-1', 'worker', 4],
        ['store-2', 'worker', 5],
        ['store-3', 'worker', 5],
      ]);
      expect(result.hosts[0]!.action).toContain(`init the first control plane for endpoint ${endpoint}`);
      expect(result.hosts[1]!.action).toMatch(
        new RegExp(`^join as control plane through ${endpoint.replaceAll('.', '\\.')}`),
      );
      // Connects nowhere.
      expect([...connectionsSince(env, connectionsBefore).values()]).toEqual(env.targets.map(() => 0));

      const noEndpoint = writeInventory('no-endpoint.yaml', undefined);
      const refused = await fleet<{ error: { code: string; message: string; hints?: string[] } }>('up', [], noEndpoint);
      expect(refused.run.exitCode).toBe(3);
      expect(refused.result.error.code).toBe('E_INVENTORY');
      expect(refused.result.error.message).toMatch(
        new RegExp(
          `^${noEndpoint.replaceAll('.', '\\.')}:6: controlPlane\\.endpoint: 3 control-plane hosts \\(cp1, cp2, cp3\\) need a control-plane endpoint`,
        ),
      );
    },
    TEST_TIMEOUT_MS,
  );

  let failedRun: FleetUpResult;

  it(
    'a control plane that fails to join stops the run before any node starts, and no secret reaches the output, the state or the logs',
    async () => {
      // cp3's kubelet port is taken: the control-plane join preflight fails there.
      freeKubeletPort = await takeKubeletPort(env, controlPlanes[2]!);
      const connectionsBefore = connectionCounts(env);
      const { run, result } = await fleet<FleetUpResult>('up', []);
      expect(run.exitCode, run.stderr).toBe(1);
      expect(result.controlPlane).toMatchObject({
        host: 'cp1',
        role: 'control-plane',
        isChanged: true,
        endpoint: `${controlPlanes[0]!.address}:6443`,
      });
      expect(result.stopReason).toBe('control-plane-failed');
      const byName = new Map(result.hosts.map((entry) => [entry.host, entry]));
      expect(result.hosts.map((entry) => [entry.host, entry.role, entry.status])).toEqual([
        ['cp2', 'control-plane', 'done'],
        ['cp3', 'control-plane', 'failed'],
        ...nodes.map((_, index) => [nodeName(index), 'worker', 'skipped']),
      ]);
      expect(byName.get('cp2')).toMatchObject({
        isChanged: true,
        node: { name: controlPlanes[1]!.name, isReady: true },
      });
      expect(byName.get('cp3')).toMatchObject({ phase: 'preflight', error: { code: 'E_PREFLIGHT' } });
      expect(byName.get('cp3')!.error!.message).toContain('port-10250');
      for (const [index] of nodes.entries()) {
        expect(byName.get(nodeName(index))).toMatchObject({
          attempts: 0,
          error: { code: 'E_FLEET_NOT_STARTED' },
        });
        expect(byName.get(nodeName(index))!.error!.message).toMatch(/^not started: control plane cp3 did not join/);
      }
      // No node was even connected to.
      const connections = connectionsSince(env, connectionsBefore);
      for (const host of nodes) expect(connections.get(host.name), host.name).toBe(0);

      // The certificate key (kept root-only on cp1) and the join token never left unredacted.
      const certificateKey = (await env.run(controlPlanes[0]!, `cat ${CERTIFICATE_KEY_FILE}`)).trim();
      expect(certificateKey).toMatch(/^[0-9a-f]{64}$/);
      expect(await env.run(controlPlanes[0]!, `stat -c %a ${CERTIFICATE_KEY_FILE}`)).toBe('600\n');
      const cp2Config = load(await env.run(controlPlanes[1]!, 'cat /etc/rancher/k3s/config.yaml')) as Record<
        string,
        unknown
      >;
      expect(cp2Config.server).toBe(`https://${controlPlanes[0]!.address}:6443`);
      const written = [run.stdout, run.stderr, runFiles(result.runDir)].join('\n');
      expect(written).not.toContain(certificateKey);
      expect(written).not.toMatch(/\b[a-z0-9]{6}\.[a-z0-9]{16}\b/);
      expect(readFileSync(hostLogPath(result.runDir, 'cp2'), 'utf8')).toContain('control-plane-join');
      // One at a time: cp3 started only once cp2 was done.
      const logAt = (host: string, prefix: string): number => {
        const line = readFileSync(hostLogPath(result.runDir, host), 'utf8')
          .split('\n')
          .find((entry) => entry.startsWith(`${entry.slice(0, entry.indexOf(' '))} [${host}] ${prefix}`))!;
        return Date.parse(line.slice(0, line.indexOf(' ')));
      };
      expect(logAt('cp3', 'start')).toBeGreaterThanOrEqual(logAt('cp2', 'done'));
      failedRun = result;
    },
    TEST_TIMEOUT_MS,
  );

  it(
    '--resume last skips the control plane that joined, joins the third and every node: three servers of one cluster',
    async () => {
      expect(failedRun, 'the failed run comes first').toBeDefined();
      await freeKubeletPort();
      const connectionsBefore = connectionCounts(env);
      const { run, result } = await fleet<FleetUpResult>('up', ['--resume', 'last']);
      expect(run.exitCode, run.stderr).toBe(0);
      expect(result.runId).toBe(failedRun.runId);
      expect(result.stopReason).toBeUndefined();
      expect(result.controlPlane.isChanged).toBe(false);
      const byName = new Map(result.hosts.map((entry) => [entry.host, entry]));
      // Finished before: not started again, not even connected to.
      expect(byName.get('cp2')).toMatchObject({ status: 'done', attempts: 1 });
      expect(byName.get('cp2')!.node).toBeUndefined();
      const connections = connectionsSince(env, connectionsBefore);
      expect(connections.get(controlPlanes[1]!.name)).toBe(0);
      expect(byName.get('cp3')).toMatchObject({ status: 'done', attempts: 2, isChanged: true });
      for (const [index, host] of nodes.entries()) {
        expect(byName.get(nodeName(index))).toMatchObject({
          status: 'done',
          attempts: 1,
          node: { name: host.name, isReady: true },
        });
        expect(connections.get(host.name), host.name).toBe(1);
      }

      // The simulated k3s: cp2 and cp3 run as servers joined through the endpoint, with the server token
      // rebuilt on the verified CA; each serves the one cluster's API (forwarding to cp1's store).
      for (const host of controlPlanes.slice(1)) {
        const config = load(await env.run(host, 'cat /etc/rancher/k3s/config.yaml')) as Record<string, unknown>;
        expect(config.server).toBe(`https://${controlPlanes[0]!.address}:6443`);
        expect(String(config.token)).toMatch(/^K10[0-9a-f]{64}::server:/);
      }
      const servers = await controlPlaneNodesByServer(
        adminKubeconfig(),
        controlPlanes,
        'node-role.kubernetes.io/control-plane=true',
      );
      const names = controlPlanes.map((cp) => cp.name).sort();
      expect(servers).toEqual(new Map(controlPlanes.map((host) => [host.name, names])));
      const admin = await kubeCredentialsOf(readFileSync(adminKubeconfig(), 'utf8'), { what: 'admin' });
      const all = await new KubeClient(admin).list<{ metadata: { name: string } }>('/api/v1/nodes');
      expect(all.map((node) => node.metadata.name).sort()).toEqual(env.targets.map((host) => host.name).sort());
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a re-run changes nothing',
    async () => {
      const { run, result } = await fleet<FleetUpResult>('up', []);
      expect(run.exitCode, run.stderr).toBe(0);
      expect(result.runId).not.toBe(failedRun.runId);
      expect(result.controlPlane.isChanged).toBe(false);
      expect(result.hosts.map((entry) => [entry.host, entry.status, entry.isChanged])).toEqual([
        ['cp2', 'done', false],
        ['cp3', 'done', false],
        ...nodes.map((_, index) => [nodeName(index), 'done', false]),
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'fleet reset over the inventory leaves every host as it was before',
    async () => {
      const { run, result } = await fleet<FleetResetResult>('reset', ['--force']);
      expect(run.exitCode, run.stderr).toBe(0);
      expect(result.hosts.map((entry) => [entry.host, entry.role, entry.status, entry.hadState])).toEqual([
        ...controlPlanes.map((_, index) => [cpName(index), 'control-plane', 'done', true]),
        ...nodes.map((_, index) => [nodeName(index), 'worker', 'done', true]),
      ]);
      for (const host of env.targets) expect(await listing(env, host), host.name).toBe(before.get(host.name));
    },
    TEST_TIMEOUT_MS,
  );
});
