/**
 * `fleet up` with three control-plane hosts and nodes, as operators run it,
 * once for each distribution: the CLI as a subprocess, the distribution's
 * **simulation** (`test/support/sim-k3s`, not k3s; `test/support/sim-kubeadm`:
 * stand-in kubeadm, kubelet and containerd, not Kubernetes). The harness has
 * no load balancer, so the inventory names the first control plane's address
 * as the control-plane endpoint, written out as the inventory must. One
 * harness per distribution serves every test of it, in order:
 *
 * 1. `fleet up --dry-run` shows the init, the control-plane joins one by one
 *    and the node waves; an inventory without the endpoint is refused with
 *    its line;
 * 2. `--distribution` other than the package's is refused before any host is
 *    reached; `fleet up` with the third control plane unfit (its kubelet port
 *    taken): the second joins with the certificate key kept on the first, the
 *    third fails preflight, and no node starts; neither the certificate key
 *    nor the join token reaches the output, the state file or the host logs;
 * 3. `--resume last` once it is fixed: the finished control plane is not
 *    touched, the third joins, every node joins; the three are control planes
 *    of one cluster;
 * 4. a re-run changes nothing;
 * 5. `fleet reset` over the inventory leaves every host as it was before.
 *
 * Each distribution keeps its own layout (see {@link SPECIFICS}): k3s's
 * fleet is an edgeadm inventory with three stores behind a bastion and the
 * control planes dual-homed (as in a datacenter); kubeadm's is an Ansible
 * inventory whose `edgeadm_package` is a kubeadm package and no
 * `--distribution` (the package says kubeadm), with one store, and its upload
 * expires before the resume (kube-system/kubeadm-certs is gone, as kubeadm's
 * token cleaner leaves it 2 hours after the upload), so the first control
 * plane's init uploads again under the kept key.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetUpDryRun } from '../../../src/commands/fleet/up.js';
import type { FleetResetResult } from '../../../src/fleet/fleet-reset.js';
import type { FleetUpResult } from '../../../src/fleet/fleet-up.js';
import { hostLogPath } from '../../../src/fleet/run-state.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { listing } from '../../support/cluster-cli.js';
import { DISTRIBUTIONS, type DistributionName, type TestDistribution } from '../../support/distributions.js';
import {
  connectionCounts,
  connectionsSince,
  controlPlaneNodesByServer,
  fleetCliFor,
  runFiles,
  takeKubeletPort,
  type FleetCli,
} from '../../support/fleet-cli.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import { printedBy } from '../../support/run-output.js';

const CONTROL_PLANE_COUNT = 3;
/** Bounds for one CLI run and one test on a busy 2-core machine. */
const CLI_TIMEOUT_MS = 300_000;
const TEST_TIMEOUT_MS = 600_000;
const SSH_TIMEOUT_SECONDS = '15';
/** Where fleet up keeps the certificate key on the first control plane. */
const CERTIFICATE_KEY_FILE = '/var/lib/edgeadm/state/fleet-certificate-key';
const KUBEADM_CERTS = '/api/v1/namespaces/kube-system/secrets/kubeadm-certs';

/** The fleet a distribution's suite brings up. */
interface Fleet {
  env: TestHosts;
  pkg: string;
  home: string;
  controlPlanes: TestHost[];
  nodes: TestHost[];
  admin(): Promise<KubeClient>;
}

/** What each distribution does its own way. */
interface Specifics {
  /** Test titles that have always differed between the distributions. */
  titles: { suite: string; failedRun: string; resume: string; reset: string };
  /** How many stores, and whether they sit behind a bastion (the control planes then dual-homed). */
  nodeCount: number;
  hasBastion: boolean;
  /** The other distribution, which the package refuses. */
  otherDistribution: DistributionName;
  /** The label selector of the control-plane Nodes. */
  controlPlaneSelector: string;
  /** Writes the inventory (without the endpoint when `endpoint` is undefined); its path. */
  writeInventory(fleet: Fleet, file: string, endpoint: string | undefined): string;
  /** The message of an inventory without the endpoint, for three control planes. */
  noEndpointMessage(path: string): RegExp;
  /** The first and second control plane after the failed run: for the endpoint, with the kept `key`. */
  expectControlPlanesAfterFailedRun(fleet: Fleet, key: string): Promise<void>;
  /** What happens to the cluster between the failed run and the resume. */
  beforeResume(fleet: Fleet): Promise<void>;
  /** Whether the resumed run changes the first control plane (it uploads again when the upload expired). */
  isFirstChangedOnResume: boolean;
  /** The joined control planes after the resume. */
  expectControlPlanesAfterResume(fleet: Fleet): Promise<void>;
}

const cpName = (index: number): string => `cp${index + 1}`;
const nodeName = (index: number): string => `store-${index + 1}`;

const SPECIFICS: Record<DistributionName, Specifics> = {
  k3s: {
    titles: {
      suite: 'edgeadm fleet up with three control planes (simulated k3s)',
      failedRun:
        'a control plane that fails to join stops the run before any node starts, and no secret reaches the output, the state or the logs',
      resume:
        '--resume last skips the control plane that joined, joins the third and every node: three servers of one cluster',
      reset: 'fleet reset over the inventory leaves every host as it was before',
    },
    nodeCount: 3,
    hasBastion: true,
    otherDistribution: 'kubeadm',
    controlPlaneSelector: 'node-role.kubernetes.io/control-plane=true',
    /** The fleet in edgeadm's format: three control planes with `endpoint`, three stores behind the bastion. */
    writeInventory({ env, pkg, home, controlPlanes, nodes }, file, endpoint) {
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
    },
    noEndpointMessage: (path) =>
      new RegExp(
        `^${path.replaceAll('.', '\\.')}:6: controlPlane\\.endpoint: 3 control-plane hosts \\(cp1, cp2, cp3\\) need a control-plane endpoint`,
      ),
    async expectControlPlanesAfterFailedRun({ env, controlPlanes }) {
      const cp2Config = load(await env.run(controlPlanes[1]!, 'cat /etc/rancher/k3s/config.yaml')) as Record<
        string,
        unknown
      >;
      expect(cp2Config.server).toBe(`https://${controlPlanes[0]!.address}:6443`);
    },
    async beforeResume() {},
    isFirstChangedOnResume: false,
    async expectControlPlanesAfterResume({ env, controlPlanes }) {
      // The simulated k3s: cp2 and cp3 run as servers joined through the endpoint, with the server token
      // rebuilt on the verified CA; each serves the one cluster's API (forwarding to cp1's store).
      for (const host of controlPlanes.slice(1)) {
        const config = load(await env.run(host, 'cat /etc/rancher/k3s/config.yaml')) as Record<string, unknown>;
        expect(config.server).toBe(`https://${controlPlanes[0]!.address}:6443`);
        expect(String(config.token)).toMatch(/^K10[0-9a-f]{64}::server:/);
      }
    },
  },
  kubeadm: {
    titles: {
      suite: 'edgeadm fleet up with three control planes on kubeadm (simulated kubeadm)',
      failedRun:
        'the package says kubeadm: cp1 is inited for the endpoint, cp2 joins as a control plane with the kept key, cp3 fails and no node starts',
      resume:
        '--resume last after the upload expired: init uploads again under the kept key, cp3 and the node join, one cluster',
      reset: 'fleet reset leaves every host as it was before',
    },
    nodeCount: 1,
    hasBastion: false,
    otherDistribution: 'k3s',
    controlPlaneSelector: 'node-role.kubernetes.io/control-plane',
    /** Ansible's format, as it is: the kubeadm package at the top, the endpoint on the control-plane group. */
    writeInventory({ env, pkg, home, controlPlanes, nodes }, file, endpoint) {
      const lines = [
        'all:',
        '  vars:',
        '    ansible_user: root',
        `    ansible_ssh_private_key_file: ${env.keys.root}`,
        `    edgeadm_package: ${pkg}`,
        '  children:',
        '    control_plane:',
        ...(endpoint === undefined ? [] : [`      vars: { control_plane_endpoint: "${endpoint}" }`]),
        '      hosts:',
        ...controlPlanes.map((host, index) => `        ${cpName(index)}: { ansible_host: "${host.address}" }`),
        '    stores:',
        '      hosts:',
        ...nodes.map((host, index) => `        ${nodeName(index)}: { ansible_host: "${host.address}" }`),
      ];
      const path = join(home, file);
      writeFileSync(path, `${lines.join('\n')}\n`);
      return path;
    },
    noEndpointMessage: (path) =>
      new RegExp(
        `^${path.replaceAll('.', '\\.')}:7: all\\.children\\.control_plane\\.vars\\.control_plane_endpoint: 3 control-plane hosts \\(cp1, cp2, cp3\\) need a control-plane endpoint`,
      ),
    async expectControlPlanesAfterFailedRun({ env, controlPlanes }, key) {
      // kubeadm on cp1, for the endpoint; cp2 joined through it with the key kept on cp1.
      const initConfig = loadAll(
        await env.run(controlPlanes[0]!, 'cat /etc/kubernetes/edgeadm-kubeadm-init.yaml'),
      ) as Array<Record<string, unknown>>;
      const cluster = initConfig.find((doc) => doc?.kind === 'ClusterConfiguration')!;
      expect(cluster.controlPlaneEndpoint).toBe(`${controlPlanes[0]!.address}:6443`);
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
    },
    async beforeResume({ admin }) {
      // As kubeadm's token cleaner leaves the cluster 2 hours after the upload: no kubeadm-certs.
      expect(await (await admin()).delete(KUBEADM_CERTS)).toBe(true);
    },
    isFirstChangedOnResume: true,
    async expectControlPlanesAfterResume({ env, controlPlanes, admin }) {
      expect(await (await admin()).get(KUBEADM_CERTS)).toBeDefined();
      // cp3's simulated kubeadm downloaded the cluster CA with the key.
      expect(await env.run(controlPlanes[2]!, 'cat /etc/kubernetes/pki/ca.key')).toBe(
        await env.run(controlPlanes[0]!, 'cat /etc/kubernetes/pki/ca.key'),
      );
    },
  },
};

describe.each(DISTRIBUTIONS)('$name', (distribution: TestDistribution) => {
  const specifics = SPECIFICS[distribution.name];

  let env: TestHosts;
  let home: string;
  let pkg: string;
  let controlPlanes: TestHost[];
  let nodes: TestHost[];
  let inventory: string;
  let fleetCli: FleetCli;
  let freeKubeletPort: () => Promise<void>;
  const before = new Map<string, string>();

  const adminKubeconfig = (): string => join(home, 'admin.kubeconfig');
  async function admin(): Promise<KubeClient> {
    return new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig(), 'utf8'), { what: 'admin' }));
  }
  const fleetOf = (): Fleet => ({ env, pkg, home, controlPlanes, nodes, admin });

  beforeAll(async () => {
    ensureCliBuilt('commands/fleet/up.js', [...distribution.sources]);
    const bastion = specifics.hasBastion ? 1 : 0;
    env = await startTestHosts({
      count: bastion + CONTROL_PLANE_COUNT + specifics.nodeCount,
      ...(specifics.hasBastion
        ? { bastion: true, dualHomed: Array.from({ length: CONTROL_PLANE_COUNT }, (_, index) => index + 1) }
        : {}),
    });
    controlPlanes = env.targets.slice(0, CONTROL_PLANE_COUNT);
    nodes = env.targets.slice(CONTROL_PLANE_COUNT);
    home = mkdtempSync(join(env.dir, 'fleet-ha-home-'));
    pkg = (await distribution.buildPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
    inventory = specifics.writeInventory(fleetOf(), 'inventory.yaml', controlPlanes[0]!.address);
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

  const fleet = <T>(command: string, extra: string[], file = inventory) => fleetCli<T>(command, file, extra);

  describe(specifics.titles.suite, () => {
    it(
      'fleet up --dry-run shows the init, the control-plane joins one at a time and the node waves; no endpoint is refused with its line',
      async () => {
        const connectionsBefore = connectionCounts(env);
        const { run, result } = await fleet<FleetUpDryRun>('up', ['--dry-run', '--canary', '1']);
        expect(run.exitCode, printedBy(run)).toBe(0);
        const endpoint = controlPlanes[0]!.address;
        // One canary node first, then the rest in one wave.
        expect(result.hosts.map((entry) => [entry.host, entry.role, entry.wave])).toEqual([
          ['cp1', 'control-plane', 1],
          ['cp2', 'control-plane', 2],
          ['cp3', 'control-plane', 3],
          ...nodes.map((_, index) => [nodeName(index), 'worker', index === 0 ? 4 : 5]),
        ]);
        expect(result.hosts[0]!.action).toContain(`init the first control plane for endpoint ${endpoint}`);
        expect(result.hosts[1]!.action).toMatch(
          new RegExp(`^join as control plane through ${endpoint.replaceAll('.', '\\.')}`),
        );
        // Connects nowhere.
        expect([...connectionsSince(env, connectionsBefore).values()]).toEqual(env.targets.map(() => 0));

        const noEndpoint = specifics.writeInventory(fleetOf(), 'no-endpoint.yaml', undefined);
        const refused = await fleet<{ error: { code: string; message: string; hints?: string[] } }>(
          'up',
          [],
          noEndpoint,
        );
        expect(refused.run.exitCode).toBe(3);
        expect(refused.result.error.code).toBe('E_INVENTORY');
        expect(refused.result.error.message).toMatch(specifics.noEndpointMessage(noEndpoint));
      },
      TEST_TIMEOUT_MS,
    );

    let failedRun: FleetUpResult;

    it(
      specifics.titles.failedRun,
      async () => {
        const connectionsBefore = connectionCounts(env);
        const refused = await fleet<{ error: { code: string } }>('up', ['--distribution', specifics.otherDistribution]);
        expect(refused.run.exitCode).toBe(3);
        expect(refused.result.error.code).toBe('E_PACKAGE_DISTRIBUTION');
        expect([...connectionsSince(env, connectionsBefore).values()]).toEqual(env.targets.map(() => 0));

        // cp3's kubelet port is taken: the control-plane join preflight fails there.
        freeKubeletPort = await takeKubeletPort(env, controlPlanes[2]!);
        const { run, result } = await fleet<FleetUpResult>('up', []);
        expect(run.exitCode, printedBy(run)).toBe(1);
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
        expect(result.hosts.map((entry) => [entry.host, entry.status, entry.error?.code])).toEqual([
          ['cp2', 'done', undefined],
          ['cp3', 'failed', 'E_PREFLIGHT'],
          ...nodes.map((_, index) => [nodeName(index), 'skipped', 'E_FLEET_NOT_STARTED']),
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
        await specifics.expectControlPlanesAfterFailedRun(fleetOf(), certificateKey);
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
      specifics.titles.resume,
      async () => {
        expect(failedRun, 'the failed run comes first').toBeDefined();
        await freeKubeletPort();
        await specifics.beforeResume(fleetOf());
        const connectionsBefore = connectionCounts(env);
        const { run, result } = await fleet<FleetUpResult>('up', ['--resume', 'last']);
        expect(run.exitCode, printedBy(run)).toBe(0);
        expect(result.runId).toBe(failedRun.runId);
        expect(result.stopReason).toBeUndefined();
        expect(result.controlPlane.isChanged).toBe(specifics.isFirstChangedOnResume);
        expect(result.hosts.map((entry) => [entry.host, entry.status, entry.attempts])).toEqual([
          ['cp2', 'done', 1],
          ['cp3', 'done', 2],
          ...nodes.map((_, index) => [nodeName(index), 'done', 1]),
        ]);
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

        await specifics.expectControlPlanesAfterResume(fleetOf());
        const servers = await controlPlaneNodesByServer(
          adminKubeconfig(),
          controlPlanes,
          specifics.controlPlaneSelector,
        );
        const names = controlPlanes.map((cp) => cp.name).sort();
        expect(servers).toEqual(new Map(controlPlanes.map((host) => [host.name, names])));
        const all = await (await admin()).list<{ metadata: { name: string } }>('/api/v1/nodes');
        expect(all.map((node) => node.metadata.name).sort()).toEqual(env.targets.map((host) => host.name).sort());
      },
      TEST_TIMEOUT_MS,
    );

    it(
      'a re-run changes nothing',
      async () => {
        const { run, result } = await fleet<FleetUpResult>('up', []);
        expect(run.exitCode, printedBy(run)).toBe(0);
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
      specifics.titles.reset,
      async () => {
        const { run, result } = await fleet<FleetResetResult>('reset', ['--force']);
        expect(run.exitCode, printedBy(run)).toBe(0);
        expect(result.hosts.map((entry) => [entry.host, entry.role, entry.status, entry.hadState])).toEqual([
          ...controlPlanes.map((_, index) => [cpName(index), 'control-plane', 'done', true]),
          ...nodes.map((_, index) => [nodeName(index), 'worker', 'done', true]),
        ]);
        for (const host of env.targets) expect(await listing(env, host), host.name).toBe(before.get(host.name));
      },
      TEST_TIMEOUT_MS,
    );
  });
});
