/**
 * `edgeadm upgrade apply` on an HA control plane (three), one control plane
 * at a time, through the CLI on netns+sshd test hosts with no route out,
 * once for each SIMULATED distribution (test/support/sim-k3s: not k3s;
 * test/support/sim-kubeadm: stand-in kubeadm, kubelet and containerd, not
 * Kubernetes). For kubeadm the first control plane to move runs `kubeadm
 * upgrade apply` and the others `kubeadm upgrade node`.
 *
 * First, a fault: a release that fails once installed (k3s: the server;
 * kubeadm: the kubelet) is applied to the second control plane, the first to
 * move (for kubeadm: the cluster's `kubeadm upgrade apply`). It must be
 * rolled back there: its binaries and configuration the old ones, the old
 * version answering through it, the cluster's data served and written
 * through it, every Node Ready at the old version, the API answering through
 * the first control plane throughout, and, for kubeadm, kubeadm-config
 * recording the old version again (the HA datastore is not restored, so what
 * `kubeadm upgrade apply` rewrote cluster-wide is put back by edgeadm).
 * Then the upgrade, with a second fault mid-way: with the second control
 * plane at the new version, the failing release on the third is rolled
 * back there and only there (for kubeadm it ran `kubeadm upgrade node`, and
 * kubeadm-config keeps the new version); then the third and first move.
 *
 * The API is polled every 100 ms with the admin kubeconfig (GET /readyz,
 * each request bounded by 1 s) through a control plane that is not being
 * upgraded. What is asserted, precisely:
 * - while the second and third control planes move, polled through the
 *   first: no poll is refused or unanswered (0 failures);
 * - while the first control plane moves, polled through the second: 0
 *   failures as well. Each simulated k3s server, and each simulated kubeadm
 *   control plane (its stacked etcd static Pod), runs a real etcd member and
 *   the simulated API server keeps its objects in etcd, one instance leading
 *   by election and the others reaching it (test/support/sim-k3s/README.md
 *   and test/support/sim-kubeadm/README.md, "HA on etcd"), so the first
 *   control plane, its member and the API server that led, can go away
 *   while the others answer.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpgradeApplyResult } from '../../../src/cluster/upgrade/apply.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import type { BuiltPackage } from '../../../src/packages/build.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCli, json, printedJoinArgs, sshArgs } from '../../support/cluster-cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { buildSimKubeadmPackage } from '../../support/sim-kubeadm/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

const CLI_TIMEOUT_MS = 300_000;
const TEST_TIMEOUT_MS = 900_000;
const NODE_WAIT_MS = 90_000;
const CERTIFICATE_KEY = 'b'.repeat(64);
/** How often the API is polled during an upgrade. */
const POLL_INTERVAL_MS = 100;
/** How long one poll may take before it counts as unanswered. */
const POLL_TIMEOUT_MS = 1_000;

interface Flavour {
  distribution: 'k3s' | 'kubeadm';
  old: string;
  next: string;
  build(dir: string, version: string): Promise<BuiltPackage>;
  /** A release of `version` that fails once installed (k3s: the server; kubeadm: the kubelet). */
  buildBroken(dir: string, version: string): Promise<BuiltPackage>;
  /**
   * What an upgrade of an HA control plane replaces and its rollback puts
   * back: binaries and configuration. Not the datastore: in an HA control
   * plane it is the peers' (one member's data restored alone would not
   * rejoin them), so edgeadm leaves it to them.
   */
  treeScript: string;
}

const FLAVOURS: Flavour[] = [
  {
    distribution: 'k3s',
    old: 'v1.31.4+k3s1',
    next: 'v1.32.1+k3s1',
    build: (dir, version) => buildSimK3sPackage(dir, { kubernetesVersion: version }),
    buildBroken: (dir, version) => buildSimK3sPackage(dir, { kubernetesVersion: version, isServerBroken: true }),
    treeScript: 'sha256sum /usr/local/bin/k3s /etc/rancher/k3s/config.yaml',
  },
  {
    distribution: 'kubeadm',
    old: 'v1.31.4',
    next: 'v1.32.1',
    build: (dir, version) => buildSimKubeadmPackage(dir, { kubernetesVersion: version }),
    buildBroken: (dir, version) => buildSimKubeadmPackage(dir, { kubernetesVersion: version, isKubeletBroken: true }),
    // The binaries, manifests, pki, kubeconfigs and kubelet configuration (not the etcd data).
    treeScript: [
      'sha256sum /usr/local/bin/kubeadm /usr/local/bin/kubelet /usr/local/bin/kubectl',
      'cd /etc/kubernetes && find manifests pki -type f -exec sha256sum {} + | sort && sha256sum *.conf',
      'cd /var/lib/kubelet && sha256sum config.yaml kubeadm-flags.env',
    ].join('; '),
  },
];

/** Polls /readyz through `server` until stopped; returns how many polls there were and how many failed. */
function pollApi(client: KubeClient): { stop(): Promise<{ polls: number; failed: number }> } {
  let isStopping = false;
  let polls = 0;
  let failed = 0;
  const loop = (async () => {
    while (!isStopping) {
      const at = Date.now();
      polls += 1;
      try {
        if ((await client.raw('GET', '/readyz', { timeoutMs: POLL_TIMEOUT_MS })).status !== 200) failed += 1;
      } catch {
        failed += 1;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, POLL_INTERVAL_MS - (Date.now() - at))));
    }
  })();
  return {
    async stop() {
      isStopping = true;
      await loop;
      return { polls, failed };
    },
  };
}

describe.each(FLAVOURS)('edgeadm upgrade apply on a simulated $distribution HA control plane', (flavour) => {
  let env: TestHosts;
  let home: string;
  const packages = new Map<string, BuiltPackage>();
  const edgeadm = (args: string[]): Promise<CliResult> => clusterCli(home, CLI_TIMEOUT_MS)(args);
  const server = (index: number): TestHost => env.targets[index]!;

  /** An admin client whose requests go to `host`'s own API server. */
  async function adminThrough(host: TestHost): Promise<KubeClient> {
    const credentials = await kubeCredentialsOf(readFileSync(join(home, 'admin.yaml'), 'utf8'), { what: 'admin' });
    return new KubeClient({ ...credentials, server: `https://${host.address}:6443` });
  }

  async function waitForNodes(version: string): Promise<void> {
    const client = await adminThrough(server(0));
    const deadline = Date.now() + NODE_WAIT_MS;
    for (;;) {
      try {
        const nodes = await client.list<{ status?: { nodeInfo?: { kubeletVersion?: string } } }>('/api/v1/nodes');
        if (nodes.length === 3 && nodes.every((n) => n.status?.nodeInfo?.kubeletVersion === version)) return;
      } catch {
        // The API server may be restarting.
      }
      if (Date.now() > deadline) throw new Error(`the three Nodes did not all report ${version}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  /** What the control-plane phase of the last `upgrade apply` said it ran (from that run's log). */
  function kubeadmCommandOfLastRun(): string {
    const dir = join(home, '.edgeadm', 'logs');
    const last = readdirSync(dir)
      .filter((name) => name.includes('-upgrade-apply-'))
      .sort()
      .at(-1);
    const text = last === undefined ? '' : readFileSync(join(dir, last), 'utf8');
    // The phase's own line (not its summary, which names both).
    return /\[control-plane\] (kubeadm upgrade (?:apply v\S+|node))$/m.exec(text)?.[1] ?? '(none)';
  }

  const upgrade = (host: TestHost, pkg = flavour.next, gateTimeout = '120s'): Promise<CliResult> =>
    edgeadm([
      'upgrade',
      'apply',
      ...sshArgs(env, host),
      '--install-pkg-path',
      packages.get(pkg)!.file,
      '--gate-timeout',
      gateTimeout,
      '--json',
    ]);

  /** Every Node's name, kubelet version and Ready condition, through `host`. */
  async function nodesThrough(host: TestHost): Promise<string[]> {
    const nodes = await (
      await adminThrough(host)
    ).list<{
      metadata: { name: string };
      status?: { nodeInfo?: { kubeletVersion?: string }; conditions?: Array<{ type: string; status: string }> };
    }>('/api/v1/nodes');
    return nodes
      .map(
        (n) =>
          `${n.metadata.name} ${n.status?.nodeInfo?.kubeletVersion ?? ''} Ready=${n.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? ''}`,
      )
      .sort();
  }

  beforeAll(async () => {
    ensureCliBuilt('commands/upgrade/apply.js', ['src', 'test/support/sim-k3s', 'test/support/sim-kubeadm']);
    env = await startTestHosts({ count: 3 });
    home = mkdtempSync(join(env.dir, 'cli-home-'));
    const dir = mkdtempSync(join(env.dir, 'pkg-'));
    for (const version of [flavour.old, flavour.next]) packages.set(version, await flavour.build(dir, version));
    packages.set('broken', await flavour.buildBroken(dir, flavour.next));
    const init = json<{ controlPlaneJoinCommand: string }>(
      await edgeadm([
        'init',
        ...sshArgs(env, server(0)),
        '--distribution',
        flavour.distribution,
        '--install-pkg-path',
        packages.get(flavour.old)!.file,
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
    for (const host of [server(1), server(2)]) {
      json(
        await edgeadm([
          ...printedJoinArgs(init.controlPlaneJoinCommand, { isDistributionKept: true }),
          '--install-pkg-path',
          packages.get(flavour.old)!.file,
          '--control-plane',
          '--certificate-key',
          CERTIFICATE_KEY,
          '--json',
          ...sshArgs(env, host),
        ]),
      );
    }
    await waitForNodes(flavour.old);
  }, TEST_TIMEOUT_MS);

  afterAll(async () => {
    await env?.teardown();
  });

  /** The version the cluster's kubeadm-config records (kubeadm only). */
  async function kubeadmConfigVersion(through: TestHost): Promise<string | undefined> {
    const config = await (
      await adminThrough(through)
    ).request<{ data: { ClusterConfiguration: string } }>(
      'GET',
      '/api/v1/namespaces/kube-system/configmaps/kubeadm-config',
    );
    return /^kubernetesVersion:\s*(\S+)$/m.exec(config.data.ClusterConfiguration)?.[1];
  }

  /** Asserts that `run` failed and was rolled back on `host`: its tree `before` again, the old version answering. */
  async function expectRolledBack(host: TestHost, run: CliResult, before: string): Promise<void> {
    expect(run.exitCode, run.stdout).toBe(1);
    const error = (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('E_UPGRADE_ROLLED_BACK');
    expect(error.message).toMatch(/the (api-ready|node-ready) gate did not pass/);
    expect(error.message).toContain(`${flavour.old} runs again, on the datastore its peers keep`);
    expect(await env.run(host, flavour.treeScript)).toBe(before);
    const state = JSON.parse(await env.run(host, 'cat /var/lib/edgeadm/upgrade/state.json')) as { step: string };
    expect(state.step).toBe('rolled-back');
    expect((await (await adminThrough(host)).request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(
      flavour.old,
    );
  }

  /**
   * Mid-way, with the second control plane at the new version: a release
   * that fails on the third is rolled back there, and only there. For
   * kubeadm this one ran `kubeadm upgrade node`, and the cluster's `kubeadm
   * upgrade apply` (by the second) stands: kubeadm-config keeps the new version.
   */
  async function faultOnTheThird(): Promise<void> {
    const third = server(2);
    const before = await env.run(third, flavour.treeScript);
    await expectRolledBack(third, await upgrade(third, 'broken', '20s'), before);
    const versions: string[] = [];
    for (const host of [server(0), server(1)]) {
      versions.push((await (await adminThrough(host)).request<{ gitVersion: string }>('GET', '/version')).gitVersion);
    }
    expect(versions).toEqual([flavour.old, flavour.next]);
    if (flavour.distribution === 'kubeadm') expect(await kubeadmConfigVersion(server(0))).toBe(flavour.next);
    const nodes = await nodesThrough(third);
    expect(nodes.every((line) => line.endsWith('Ready=True'))).toBe(true);
    expect(nodes.filter((line) => line.startsWith(`${third.name} `))).toEqual([
      `${third.name} ${flavour.old} Ready=True`,
    ]);
  }

  it(
    'a release that fails on the second control plane is rolled back there: the API answers through the first throughout, and the cluster is as before',
    async () => {
      const second = server(1);
      const first = await adminThrough(server(0));
      await first.request('POST', '/api/v1/namespaces/default/configmaps', {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'before-fault' }, data: { a: '1' } },
      });
      const nodesBefore = await nodesThrough(server(0));
      expect(nodesBefore.every((line) => line.endsWith(`${flavour.old} Ready=True`))).toBe(true);
      const before = await env.run(second, flavour.treeScript);
      const throughFirst = pollApi(first);
      const run = await upgrade(second, 'broken', '20s');
      const whileFault = await throughFirst.stop();
      // The second control plane's binaries and configuration are the old ones again, and it says so.
      await expectRolledBack(second, run, before);
      const throughSecond = await adminThrough(second);
      // It serves the cluster's data: what was written before, and what it writes the others read.
      const kept = await throughSecond.request<{ data: { a: string } }>(
        'GET',
        '/api/v1/namespaces/default/configmaps/before-fault',
      );
      expect(kept.data.a).toBe('1');
      await throughSecond.request('POST', '/api/v1/namespaces/default/configmaps', {
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after-rollback' }, data: { b: '2' } },
      });
      for (const host of [server(0), server(2)]) {
        const read = await (
          await adminThrough(host)
        ).request<{ data: { b: string } }>('GET', '/api/v1/namespaces/default/configmaps/after-rollback');
        expect(read.data.b).toBe('2');
        expect((await (await adminThrough(host)).request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(
          flavour.old,
        );
      }
      if (flavour.distribution === 'kubeadm') {
        // The failed run was the cluster's `kubeadm upgrade apply`: the cluster records the old version again,
        // so the next upgrade runs `kubeadm upgrade apply` again (asserted in the next test).
        expect(await kubeadmConfigVersion(server(0))).toBe(flavour.old);
      }
      // Every Node Ready at the old version, through each control plane.
      for (const host of [server(0), server(1), server(2)]) expect(await nodesThrough(host)).toEqual(nodesBefore);
      expect(whileFault.polls).toBeGreaterThan(0);
      expect(whileFault.failed).toBe(0);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'upgrades the three control planes one at a time, a release failing on the third rolled back mid-way; the API answers throughout, while each moves',
    async () => {
      const kubeadmLines: string[] = [];
      // The second and third control planes, polled through the first.
      const throughFirst = pollApi(await adminThrough(server(0)));
      for (const host of [server(1), server(2)]) {
        if (host === server(2)) await faultOnTheThird();
        const run = await upgrade(host);
        // With --json the error is on stdout.
        expect(run.exitCode, `${run.stdout}${run.stderr}`).toBe(0);
        expect(json<UpgradeApplyResult>(run)).toMatchObject({
          outcome: 'upgraded',
          from: flavour.old,
          to: flavour.next,
        });
        kubeadmLines.push(kubeadmCommandOfLastRun());
        expect((await (await adminThrough(host)).request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(
          flavour.next,
        );
      }
      const whileOthers = await throughFirst.stop();
      expect(whileOthers.polls).toBeGreaterThan(0);
      expect(whileOthers.failed).toBe(0);

      // The first control plane (the first etcd member and the API server that led), polled through the second.
      const throughSecond = pollApi(await adminThrough(server(1)));
      const first = await upgrade(server(0));
      expect(first.exitCode, `${first.stdout}${first.stderr}`).toBe(0);
      const whileFirst = await throughSecond.stop();
      expect(json<UpgradeApplyResult>(first)).toMatchObject({ outcome: 'upgraded', from: flavour.old });
      kubeadmLines.push(kubeadmCommandOfLastRun());
      process.stderr.write(
        `[${flavour.distribution} HA] polls while the 2nd and 3rd moved (through the 1st): ${whileOthers.polls}, failed ${whileOthers.failed}; while the 1st moved (through the 2nd): ${whileFirst.polls}, failed ${whileFirst.failed}\n`,
      );
      expect(whileFirst.polls).toBeGreaterThan(0);
      expect(whileFirst.failed).toBe(0);
      await waitForNodes(flavour.next);
      for (const host of [server(0), server(1), server(2)]) {
        expect((await (await adminThrough(host)).request<{ gitVersion: string }>('GET', '/version')).gitVersion).toBe(
          flavour.next,
        );
      }
      if (flavour.distribution === 'kubeadm') {
        expect(kubeadmLines).toEqual([
          `kubeadm upgrade apply ${flavour.next}`,
          'kubeadm upgrade node',
          'kubeadm upgrade node',
        ]);
      }
    },
    TEST_TIMEOUT_MS,
  );
});
