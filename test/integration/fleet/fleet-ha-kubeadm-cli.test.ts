/**
 * `fleet up` with three control-plane hosts and a node on kubeadm, as
 * operators run it: the CLI as a subprocess, the **simulated** kubeadm
 * (`test/support/sim-kubeadm`: stand-in kubeadm, kubelet and containerd, not
 * Kubernetes), an Ansible inventory whose `edgeadm_package` is a kubeadm
 * package and no `--distribution` (the package says kubeadm). The harness
 * has no load balancer, so `control_plane_endpoint` is the first control
 * plane's address. One harness serves every test of the file, in order:
 *
 * 1. `--distribution k3s` against the kubeadm package is refused before any
 *    host is reached; `fleet up` with the third control plane unfit (its
 *    kubelet port taken): the first is inited with kubeadm for the endpoint,
 *    the second joins with a JoinConfiguration carrying controlPlane and the
 *    certificate key kept on the first, the third fails preflight, the node
 *    does not start, and the key reaches neither the output nor the run files;
 * 2. the upload expires (kube-system/kubeadm-certs is gone, as kubeadm's
 *    token cleaner leaves it 2 hours after the upload), then `--resume last`:
 *    the first control plane's init uploads again under the kept key, the
 *    third joins, the node joins; each control plane's API server lists the
 *    three control-plane Nodes of the one cluster;
 * 3. a re-run changes nothing;
 * 4. `fleet reset` leaves every host's file tree as it was before.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetResetResult } from '../../../src/fleet/fleet-reset.js';
import type { FleetUpResult } from '../../../src/fleet/fleet-up.js';
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
import { buildSimKubeadmPackage } from '../../support/sim-kubeadm/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

const CONTROL_PLANE_COUNT = 3;
/** Bounds for one CLI run and one test on a busy 2-core machine. */
const CLI_TIMEOUT_MS = 300_000;
const TEST_TIMEOUT_MS = 600_000;
const SSH_TIMEOUT_SECONDS = '15';
/** Where fleet up keeps the certificate key on the first control plane. */
const CERTIFICATE_KEY_FILE = '/var/lib/edgeadm/state/fleet-certificate-key';
const KUBEADM_CERTS = '/api/v1/namespaces/kube-system/secrets/kubeadm-certs';

let env: TestHosts;
let home: string;
let inventory: string;
let fleet: FleetCli;
let controlPlanes: TestHost[];
let node: TestHost;
let freeKubeletPort: () => Promise<void>;
let failedRun: FleetUpResult;
const before = new Map<string, string>();

const adminKubeconfig = (): string => join(home, 'admin.kubeconfig');

async function admin(): Promise<KubeClient> {
  return new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig(), 'utf8'), { what: 'admin' }));
}

beforeAll(async () => {
  ensureCliBuilt('commands/fleet/up.js', ['src', 'test/support/sim-kubeadm']);
  env = await startTestHosts({ count: CONTROL_PLANE_COUNT + 1 });
  controlPlanes = env.targets.slice(0, CONTROL_PLANE_COUNT);
  node = env.targets[CONTROL_PLANE_COUNT]!;
  home = mkdtempSync(join(env.dir, 'fleet-kubeadm-home-'));
  const pkg = (await buildSimKubeadmPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
  // Ansible's format, as it is: the kubeadm package at the top, the endpoint on the control-plane group.
  const lines = [
    'all:',
    '  vars:',
    '    ansible_user: root',
    `    ansible_ssh_private_key_file: ${env.keys.root}`,
    `    edgeadm_package: ${pkg}`,
    '  children:',
    '    control_plane:',
    `      vars: { control_plane_endpoint: "${controlPlanes[0]!.address}" }`,
    '      hosts:',
    ...controlPlanes.map((host, index) => `        cp${index + 1}: { ansible_host: "${host.address}" }`),
    '    stores:',
    `      hosts: { store-1: { ansible_host: "${node.address}" } }`,
  ];
  inventory = join(home, 'hosts.yml');
  writeFileSync(inventory, `${lines.join('\n')}\n`);
  fleet = fleetCliFor(env, {
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

describe('edgeadm fleet up with three control planes on kubeadm (simulated kubeadm)', () => {
  it(
    'the package says kubeadm: cp1 is inited for the endpoint, cp2 joins as a control plane with the kept key, cp3 fails and no node starts',
    async () => {
      const connectionsBefore = connectionCounts(env);
      const refused = await fleet<{ error: { code: string } }>('up', inventory, ['--distribution', 'k3s']);
      expect(refused.run.exitCode).toBe(3);
      expect(refused.result.error.code).toBe('E_PACKAGE_DISTRIBUTION');
      expect([...connectionsSince(env, connectionsBefore).values()]).toEqual(env.targets.map(() => 0));

      freeKubeletPort = await takeKubeletPort(env, controlPlanes[2]!);
      const { run, result } = await fleet<FleetUpResult>('up', inventory);
      expect(run.exitCode, run.stderr).toBe(1);
      expect(result.controlPlane).toMatchObject({
        host: 'cp1',
        isChanged: true,
        endpoint: `${controlPlanes[0]!.address}:6443`,
      });
      expect(result.stopReason).toBe('control-plane-failed');
      expect(result.hosts.map((entry) => [entry.host, entry.status, entry.error?.code])).toEqual([
        ['cp2', 'done', undefined],
        ['cp3', 'failed', 'E_PREFLIGHT'],
        ['store-1', 'skipped', 'E_FLEET_NOT_STARTED'],
      ]);
      expect(result.hosts[0]).toMatchObject({ isChanged: true, node: { name: controlPlanes[1]!.name, isReady: true } });

      // kubeadm on cp1, for the endpoint; cp2 joined through it with the key kept (root-only) on cp1.
      const initConfig = loadAll(
        await env.run(controlPlanes[0]!, 'cat /etc/kubernetes/edgeadm-kubeadm-init.yaml'),
      ) as Array<Record<string, unknown>>;
      const cluster = initConfig.find((doc) => doc?.kind === 'ClusterConfiguration')!;
      expect(cluster.controlPlaneEndpoint).toBe(`${controlPlanes[0]!.address}:6443`);
      const key = (await env.run(controlPlanes[0]!, `cat ${CERTIFICATE_KEY_FILE}`)).trim();
      expect(key).toMatch(/^[0-9a-f]{64}$/);
      expect(await env.run(controlPlanes[0]!, `stat -c %a ${CERTIFICATE_KEY_FILE}`)).toBe('600\n');
      const [joinConfig] = loadAll(
        await env.run(controlPlanes[1]!, 'cat /etc/kubernetes/edgeadm-kubeadm-join.yaml'),
      ) as Array<{
        kind: string;
        controlPlane: { certificateKey: string };
        discovery: { bootstrapToken: { apiServerEndpoint: string } };
      }>;
      expect(joinConfig!.kind).toBe('JoinConfiguration');
      expect(joinConfig!.controlPlane.certificateKey).toBe(key);
      expect(joinConfig!.discovery.bootstrapToken.apiServerEndpoint).toBe(`${controlPlanes[0]!.address}:6443`);
      const written = [run.stdout, run.stderr, runFiles(result.runDir)].join('\n');
      expect(written).not.toContain(key);
      expect(written).not.toMatch(/\b[a-z0-9]{6}\.[a-z0-9]{16}\b/);
      failedRun = result;
    },
    TEST_TIMEOUT_MS,
  );

  it(
    '--resume last after the upload expired: init uploads again under the kept key, cp3 and the node join, one cluster',
    async () => {
      expect(failedRun, 'the failed run comes first').toBeDefined();
      await freeKubeletPort();
      // As kubeadm's token cleaner leaves the cluster 2 hours after the upload: no kubeadm-certs.
      const client = await admin();
      expect(await client.delete(KUBEADM_CERTS)).toBe(true);
      const { run, result } = await fleet<FleetUpResult>('up', inventory, ['--resume', 'last']);
      expect(run.exitCode, run.stderr).toBe(0);
      expect(result.runId).toBe(failedRun.runId);
      expect(result.controlPlane.isChanged).toBe(true);
      expect(result.hosts.map((entry) => [entry.host, entry.status, entry.attempts])).toEqual([
        ['cp2', 'done', 1],
        ['cp3', 'done', 2],
        ['store-1', 'done', 1],
      ]);
      expect(await client.get(KUBEADM_CERTS)).toBeDefined();
      // cp3's simulated kubeadm downloaded the cluster CA with the key.
      expect(await env.run(controlPlanes[2]!, 'cat /etc/kubernetes/pki/ca.key')).toBe(
        await env.run(controlPlanes[0]!, 'cat /etc/kubernetes/pki/ca.key'),
      );
      const names = controlPlanes.map((host) => host.name).sort();
      const servers = await controlPlaneNodesByServer(
        adminKubeconfig(),
        controlPlanes,
        'node-role.kubernetes.io/control-plane',
      );
      expect(servers).toEqual(new Map(controlPlanes.map((host) => [host.name, names])));
      const all = await client.list<{ metadata: { name: string } }>('/api/v1/nodes');
      expect(all.map((entry) => entry.metadata.name).sort()).toEqual(env.targets.map((host) => host.name).sort());
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a re-run changes nothing',
    async () => {
      const { run, result } = await fleet<FleetUpResult>('up', inventory);
      expect(run.exitCode, run.stderr).toBe(0);
      expect(result.runId).not.toBe(failedRun.runId);
      expect(result.controlPlane.isChanged).toBe(false);
      expect(result.hosts.map((entry) => [entry.host, entry.status, entry.isChanged])).toEqual([
        ['cp2', 'done', false],
        ['cp3', 'done', false],
        ['store-1', 'done', false],
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'fleet reset leaves every host as it was before',
    async () => {
      const { run, result } = await fleet<FleetResetResult>('reset', inventory, ['--force']);
      expect(run.exitCode, run.stderr).toBe(0);
      expect(result.hosts.map((entry) => [entry.host, entry.status, entry.hadState])).toEqual([
        ['cp1', 'done', true],
        ['cp2', 'done', true],
        ['cp3', 'done', true],
        ['store-1', 'done', true],
      ]);
      for (const host of env.targets) expect(await listing(env, host), host.name).toBe(before.get(host.name));
    },
    TEST_TIMEOUT_MS,
  );
});
