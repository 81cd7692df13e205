/**
 * More control planes (HA) end to end, through the CLI, on three netns+sshd
 * test hosts, once for each distribution with its SIMULATION
 * (test/support/sim-k3s: not k3s; test/support/sim-kubeadm: stand-in
 * kubeadm, kubelet and containerd, not Kubernetes): `init
 * --control-plane-endpoint --upload-certs` keeps what another control plane
 * needs in the cluster, encrypted with a certificate key that is never
 * logged; a re-run with the key changes nothing; `init phase upload-certs`
 * uploads again with a fresh key, and the old key is then refused during
 * discovery with nothing installed, as is an expired upload; `join
 * --control-plane` with the fresh key joins another control plane whose API
 * server serves the one cluster with the cluster CA; reset leaves every
 * file tree as before.
 *
 * What is kept is the distribution's own (see {@link SPECIFICS}): for k3s,
 * the server token, sealed by edgeadm in kube-system/edgeadm-control-plane-join
 * (the first server runs cluster-init; the simulated joining server takes the
 * bootstrap data with the server token and forwards to the first server's
 * store); for kubeadm, the CA, uploaded by (simulated) kubeadm into
 * kube-system/kubeadm-certs, and a JoinConfiguration carrying controlPlane
 * (the simulated kubeadm downloads and decrypts the CA itself). The third
 * host joins as a server on k3s and as a worker with the printed join
 * command on kubeadm.
 */
import { createDecipheriv } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import type { JoinResult } from '../../../src/cluster/join.js';
import type { ResetResult } from '../../../src/cluster/reset.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCliFor, printedJoinArgs, processesIn, type ClusterCli } from '../../support/cluster-cli.js';
import { DISTRIBUTIONS, type DistributionName, type TestDistribution } from '../../support/distributions.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

/** A fixed certificate key for k3s's init, so that a re-run of init can be checked for "no change". */
const CERTIFICATE_KEY = 'a1'.repeat(32);

/** What a distribution's suite run can reach. */
interface Suite {
  env: TestHosts;
  admin(server?: string): Promise<KubeClient>;
  first(): TestHost;
}

/** What each distribution does its own way, checked inside the shared tests. */
interface Specifics {
  /** Test titles that have always differed between the distributions, and those of tests new to one. */
  titles: {
    /** The suite's own title (it has always named the distribution its own way). */
    suite: string;
    initDryRun: string;
    init: string;
    rerun: string;
    wrongKey: string;
    join: string;
    reset: string;
  };
  /** The Secret (kube-system) that holds the upload. */
  uploadSecret: string;
  /** `--certificate-key` for init: k3s's suite fixes it; kubeadm's lets edgeadm make one. */
  initKeyArgs: string[];
  /** How the third host joins. */
  thirdJoinsAs: 'control-plane' | 'worker';
  /** The label selector of the control-plane Nodes. */
  controlPlaneSelector: string;
  expectInitPlan(plan: string): void;
  /** The first control plane and the upload after init, under `key`. */
  expectAfterInit(suite: Suite, key: string): Promise<void>;
  /** The upload after `init phase upload-certs`: it opens with `freshKey`, not with `oldKey`. */
  expectUploadedAgain(suite: Suite, freshKey: string, oldKey: string): Promise<void>;
  /** A control plane that joined with `key`. */
  expectJoinedControlPlane(suite: Suite, host: TestHost, key: string): Promise<void>;
  /** A worker that joined (only where the third host joins as one: kubeadm). */
  expectJoinedWorker(suite: Suite, host: TestHost): Promise<void>;
}

/** The encryption of the upload (AES-256-GCM, nonce first, tag last), undone independently of edgeadm's code. */
function decryptEntry(entry: string, keyHex: string): string {
  const bytes = Buffer.from(entry, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', Buffer.from(keyHex, 'hex'), bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(bytes.length - 16));
  return Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]).toString('utf8');
}

async function secretOf(
  suite: Suite,
  name: string,
): Promise<{ data: Record<string, string>; annotations: Record<string, string> }> {
  const secret = await (
    await suite.admin()
  ).get<{ data: Record<string, string>; metadata: { annotations?: Record<string, string> } }>(
    `/api/v1/namespaces/kube-system/secrets/${name}`,
  );
  return { data: secret!.data, annotations: secret!.metadata.annotations ?? {} };
}

/** k3s's sealed server token, as the Secret holds it (base64 of the sealed text). */
const sealedServerToken = async (suite: Suite): Promise<string> =>
  Buffer.from((await secretOf(suite, 'edgeadm-control-plane-join')).data['server-token.sealed']!, 'base64').toString(
    'utf8',
  );

const SPECIFICS: Record<DistributionName, Specifics> = {
  k3s: {
    titles: {
      suite: 'edgeadm init --upload-certs and join --control-plane on test hosts (simulated k3s)',
      initDryRun: 'init --dry-run plans the upload without the key and changes nothing',
      init: 'init starts an HA-capable first server and prints the control-plane join command',
      rerun: 'a re-run of init with the same certificate key changes nothing',
      wrongKey: 'join --control-plane with a wrong certificate key fails before anything reaches the host',
      join: 'join --control-plane adds a second and a third server that serve the API with the cluster CA',
      reset: 'reset on all three servers leaves each file tree as it was before',
    },
    uploadSecret: 'edgeadm-control-plane-join',
    initKeyArgs: ['--certificate-key', CERTIFICATE_KEY],
    thirdJoinsAs: 'control-plane',
    controlPlaneSelector: 'node-role.kubernetes.io/control-plane=true',
    expectInitPlan() {},
    async expectAfterInit(suite, key) {
      expect(key).toBe(CERTIFICATE_KEY);
      const config = load(await suite.env.run(suite.first(), 'cat /etc/rancher/k3s/config.yaml')) as Record<
        string,
        unknown
      >;
      expect(config['cluster-init']).toBe(true);
      // The server token is in the cluster only encrypted.
      const serverToken = (await suite.env.run(suite.first(), 'cat /var/lib/rancher/k3s/server/token')).trim();
      const stored = await sealedServerToken(suite);
      expect(stored).not.toContain(serverToken.split('::')[1]!);
    },
    async expectUploadedAgain(suite, freshKey, oldKey) {
      const serverToken = (await suite.env.run(suite.first(), 'cat /var/lib/rancher/k3s/server/token')).trim();
      const stored = await sealedServerToken(suite);
      expect(decryptEntry(stored, freshKey)).toBe(serverToken);
      expect(() => decryptEntry(stored, oldKey)).toThrow();
    },
    async expectJoinedControlPlane(suite, host) {
      const config = load(await suite.env.run(host, 'cat /etc/rancher/k3s/config.yaml')) as Record<string, unknown>;
      expect(config.server).toBe(`https://${suite.first().address}:6443`);
      expect(String(config.token)).toMatch(/^K10[0-9a-f]{64}::server:/);
    },
    async expectJoinedWorker() {},
  },
  kubeadm: {
    titles: {
      suite: 'edgeadm init --upload-certs and join --control-plane with --distribution kubeadm (simulated kubeadm)',
      initDryRun: 'init --dry-run plans the upload with kubeadm, the key in a file, and changes nothing',
      init: 'init sets the control-plane endpoint, has kubeadm upload the encrypted CA, and prints the control-plane join command',
      rerun: 'a re-run of init with the printed certificate key changes nothing',
      wrongKey: 'join --control-plane with the replaced key fails during discovery with nothing installed',
      join: 'join --control-plane with the fresh key runs kubeadm join with controlPlane, and the new API server serves the cluster',
      reset: 'reset on all three hosts leaves each file tree as it was before',
    },
    uploadSecret: 'kubeadm-certs',
    initKeyArgs: [],
    thirdJoinsAs: 'worker',
    controlPlaneSelector: 'node-role.kubernetes.io/control-plane',
    expectInitPlan(plan) {
      expect(plan).toContain(
        '[upload-certs] Would write /etc/kubernetes/edgeadm-kubeadm-upload-certs.yaml (mode 0600, with the certificate key), run /usr/local/bin/kubeadm init phase upload-certs --upload-certs --skip-certificate-key-print --config /etc/kubernetes/edgeadm-kubeadm-upload-certs.yaml',
      );
    },
    async expectAfterInit(suite, key) {
      const { env, first } = suite;
      // The key edgeadm made reaches no file left on the host.
      const initConfig = await env.run(first(), 'cat /etc/kubernetes/edgeadm-kubeadm-init.yaml');
      expect(initConfig).not.toContain(key);
      expect(await env.run(first(), 'ls /etc/kubernetes')).not.toContain('upload-certs');
      const cluster = (loadAll(initConfig) as Array<Record<string, unknown>>).find(
        (doc) => doc?.kind === 'ClusterConfiguration',
      )!;
      expect(cluster.controlPlaneEndpoint).toBe(`${first().address}:6443`);
      expect((cluster.apiServer as { certSANs: string[] }).certSANs).toContain(first().address);
      // kube-system/kubeadm-certs holds the CA key only encrypted, under the printed key.
      const { data } = await secretOf(suite, 'kubeadm-certs');
      const caKey = await env.run(first(), 'cat /etc/kubernetes/pki/ca.key');
      expect(Buffer.from(data['ca.key']!, 'base64').toString('latin1')).not.toContain('PRIVATE KEY');
      expect(decryptEntry(data['ca.key']!, key)).toBe(caKey);
      const binding = await (
        await suite.admin()
      ).get<{ subjects: Array<{ name: string }> }>(
        '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/kubeadm:kubeadm-certs',
      );
      expect(binding?.subjects.map((s) => s.name)).toEqual(['system:bootstrappers:kubeadm:default-node-token']);
    },
    async expectUploadedAgain(suite, freshKey, oldKey) {
      const { data } = await secretOf(suite, 'kubeadm-certs');
      expect(decryptEntry(data['ca.crt']!, freshKey)).toContain('BEGIN CERTIFICATE');
      expect(() => decryptEntry(data['ca.crt']!, oldKey)).toThrow();
    },
    async expectJoinedControlPlane({ env, first }, host, key) {
      const [joinConfig] = loadAll(await env.run(host, 'cat /etc/kubernetes/edgeadm-kubeadm-join.yaml')) as Array<{
        kind: string;
        controlPlane: { certificateKey: string; localAPIEndpoint: { advertiseAddress: string; bindPort: number } };
        discovery: { bootstrapToken: { apiServerEndpoint: string } };
      }>;
      expect(joinConfig!.kind).toBe('JoinConfiguration');
      expect(joinConfig!.controlPlane).toEqual({
        certificateKey: key,
        localAPIEndpoint: { advertiseAddress: host.address, bindPort: 6443 },
      });
      expect(joinConfig!.discovery.bootstrapToken.apiServerEndpoint).toBe(`${first().address}:6443`);
      // The simulated kubeadm downloaded the cluster CA (key included) with the certificate key.
      for (const file of ['ca.crt', 'ca.key']) {
        expect(await env.run(host, `cat /etc/kubernetes/pki/${file}`)).toBe(
          await env.run(first(), `cat /etc/kubernetes/pki/${file}`),
        );
      }
    },
    async expectJoinedWorker({ env }, host) {
      expect(await env.run(host, 'ls /etc/kubernetes/pki')).toBe('ca.crt\n');
    },
  },
};

describe.each(DISTRIBUTIONS)('$name', (distribution: TestDistribution) => {
  const specifics = SPECIFICS[distribution.name];
  const timeout = distribution.testTimeoutMs;

  let env: TestHosts;
  let cli: ClusterCli;
  let home: string;
  let pkg: string;
  let adminKubeconfig: string;
  let initLog: string;
  let joinCommand = '';
  let controlPlaneJoinCommand = '';
  let firstKey = '';
  let freshKey = '';
  const before = new Map<string, string>();

  beforeAll(async () => {
    ensureCliBuilt('commands/init.js', [...distribution.sources]);
    env = await startTestHosts({ count: 3 });
    home = mkdtempSync(join(env.dir, 'cli-home-'));
    cli = clusterCliFor(env, home, distribution.cliTimeoutMs);
    pkg = (await distribution.buildPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
    adminKubeconfig = join(home, 'admin.yaml');
    initLog = join(home, 'init.log');
    for (const host of env.targets) before.set(host.name, await listing(host));
  }, 180_000);

  afterAll(async () => {
    await env?.teardown();
  });

  const edgeadm = (args: string[]): Promise<CliResult> => cli.edgeadm(args);
  const sshArgs = (host: TestHost): string[] => cli.sshArgs(host);
  const listing = (host: TestHost): Promise<string> => cli.listing(host);
  const json = <T>(run: CliResult): T => cli.json<T>(run);

  const first = (): TestHost => env.targets[0]!;
  const second = (): TestHost => env.targets[1]!;
  const third = (): TestHost => env.targets[2]!;
  /** The control planes that join the first: the second, and the third where it joins as one. */
  const joiningControlPlanes = (): TestHost[] =>
    specifics.thirdJoinsAs === 'control-plane' ? [second(), third()] : [second()];

  async function admin(server?: string): Promise<KubeClient> {
    const credentials = await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' });
    return new KubeClient(server ? { ...credentials, server } : credentials);
  }

  const suite: Suite = {
    get env() {
      return env;
    },
    admin,
    first,
  };

  /** init's flags, without a certificate key unless the distribution's suite fixes one. */
  const initFlags = (): string[] => [
    ...sshArgs(first()),
    ...distribution.initFlags,
    '--install-pkg-path',
    pkg,
    '--control-plane-endpoint',
    first().address,
    '--upload-certs',
    '--kubeconfig-out',
    adminKubeconfig,
    '--json',
  ];
  const initArgs = (): string[] => ['init', ...initFlags(), ...specifics.initKeyArgs];

  /** The printed join command as the operator runs it (plus the package): as a control plane with `key`. */
  function joinArgs(host: TestHost, options: { key?: string } = {}): string[] {
    return [
      ...printedJoinArgs(options.key ? controlPlaneJoinCommand : joinCommand, { isDistributionKept: true }),
      '--install-pkg-path',
      pkg,
      ...(options.key ? ['--control-plane', '--certificate-key', options.key] : []),
      '--json',
      ...sshArgs(host),
    ];
  }

  describe(specifics.titles.suite, () => {
    it(
      specifics.titles.initDryRun,
      async () => {
        const result = json<InitResult>(await edgeadm([...initArgs(), '--dry-run']));
        const plan = result.plan!.join('\n');
        expect(plan).toMatch(/\[upload-certs\] Would /);
        specifics.expectInitPlan(plan);
        expect(plan).not.toContain(result.certificateKey!);
        expect(await listing(first())).toBe(before.get(first().name));
      },
      timeout,
    );

    it(
      specifics.titles.init,
      async () => {
        const result = json<InitResult>(await edgeadm([...initArgs(), '--log-file', initLog]));
        expect(result.phases.find((p) => p.path === 'upload-certs')?.status).toBe('changed');
        joinCommand = result.joinCommand!;
        controlPlaneJoinCommand = result.controlPlaneJoinCommand!;
        firstKey = result.certificateKey!;
        expect(firstKey).toMatch(/^[0-9a-f]{64}$/);
        expect(controlPlaneJoinCommand).toBe(`${joinCommand} --control-plane --certificate-key ${firstKey}`);
        expect(controlPlaneJoinCommand).toMatch(
          new RegExp(
            `^edgeadm join ${first().address.replaceAll('.', '\\.')}:6443 --token .* --control-plane --certificate-key ${firstKey}$`,
          ),
        );
        expect(joinCommand).toMatch(
          new RegExp(
            `^edgeadm join ${first().address.replaceAll('.', '\\.')}:6443 .*${distribution.joinCommandDistributionWords}$`,
          ),
        );
        // The key reaches no run log.
        expect(readFileSync(initLog, 'utf8')).not.toContain(firstKey);
        // The upload lasts as long as kubeadm keeps uploaded certificates (two hours).
        const { annotations } = await secretOf(suite, specifics.uploadSecret);
        expect(Date.parse(annotations['edgeadm.io/expires']!)).toBeGreaterThan(Date.now() + 60 * 60_000);
        await specifics.expectAfterInit(suite, firstKey);
      },
      timeout,
    );

    it(
      specifics.titles.rerun,
      async () => {
        const result = json<InitResult>(await edgeadm(['init', ...initFlags(), '--certificate-key', firstKey]));
        expect(result.isChanged).toBe(false);
        expect(result.phases.find((p) => p.path === 'upload-certs')?.status).toBe('unchanged');
      },
      timeout,
    );

    it(
      'init phase upload-certs uploads again with a fresh key',
      async () => {
        // The same flags as init, without a key: the phase makes a fresh one.
        const result = json<InitResult>(await edgeadm(['init', 'phase', 'upload-certs', ...initFlags()]));
        freshKey = result.certificateKey!;
        expect(freshKey).toMatch(/^[0-9a-f]{64}$/);
        expect(freshKey).not.toBe(firstKey);
        expect(result.phases).toEqual([expect.objectContaining({ path: 'upload-certs', status: 'changed' })]);
        await specifics.expectUploadedAgain(suite, freshKey, firstKey);
      },
      timeout,
    );

    it(
      specifics.titles.wrongKey,
      async () => {
        const run = await edgeadm(joinArgs(second(), { key: firstKey }));
        expect(run.exitCode).not.toBe(0);
        const error = (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
        expect(error.code).toBe('E_CERTIFICATE_KEY_MISMATCH');
        expect(error.message).toMatch(/^error execution phase discovery: /);
        expect(await listing(second())).toBe(before.get(second().name));
      },
      timeout,
    );

    it(
      'join --control-plane after the upload expired fails during discovery with nothing installed',
      async () => {
        const path = `/api/v1/namespaces/kube-system/secrets/${specifics.uploadSecret}`;
        const { annotations } = await secretOf(suite, specifics.uploadSecret);
        const expires = annotations['edgeadm.io/expires']!;
        await (
          await admin()
        ).mergePatch(path, {
          metadata: { annotations: { 'edgeadm.io/expires': new Date(Date.now() - 1000).toISOString() } },
        });
        try {
          const run = await edgeadm(joinArgs(second(), { key: freshKey }));
          expect(run.exitCode).not.toBe(0);
          expect((JSON.parse(run.stdout) as { error: { code: string } }).error.code).toBe(
            'E_CONTROL_PLANE_JOIN_EXPIRED',
          );
          expect(await listing(second())).toBe(before.get(second().name));
        } finally {
          await (await admin()).mergePatch(path, { metadata: { annotations: { 'edgeadm.io/expires': expires } } });
        }
      },
      timeout,
    );

    it(
      specifics.titles.join,
      async () => {
        for (const host of joiningControlPlanes()) {
          const result = json<JoinResult>(await edgeadm(joinArgs(host, { key: freshKey })));
          expect(result.phases.map((p) => `${p.path}:${p.status}`)).toEqual([
            'preflight:unchanged',
            'discovery:unchanged',
            'package:changed',
            `runtime:${distribution.runtimeOnInstall}`,
            'node-join:skipped',
            // kubeadm asks whether the cluster is an edge one (its API servers then need the node tunnel).
            `egress-selector:${distribution.name === 'kubeadm' ? 'unchanged' : 'skipped'}`,
            'control-plane-join:changed',
            'edge:skipped',
            'wait-ready:unchanged',
            'labels:skipped',
            'node-tunnel:skipped',
          ]);
          expect(result.node).toEqual({ name: host.name, isReady: true });
          await specifics.expectJoinedControlPlane(suite, host, freshKey);
        }
        // Each new API server answers the admin, verified with the cluster CA, with the one cluster's control planes.
        const names = [first(), ...joiningControlPlanes()].map((host) => host.name).sort();
        for (const host of joiningControlPlanes()) {
          const client = await admin(`https://${host.address}:6443`);
          const nodes = await client.list<{ metadata: { name: string } }>('/api/v1/nodes', {
            labelSelector: specifics.controlPlaneSelector,
          });
          expect(nodes.map((n) => n.metadata.name).sort()).toEqual(names);
        }
      },
      2 * timeout,
    );

    it(
      'a re-run of join --control-plane changes nothing',
      async () => {
        const result = json<JoinResult>(await edgeadm(joinArgs(second(), { key: freshKey })));
        expect(result.isChanged).toBe(false);
      },
      timeout,
    );

    if (specifics.thirdJoinsAs === 'worker') {
      it(
        'a worker joins with the printed join command',
        async () => {
          const result = json<JoinResult>(await edgeadm(joinArgs(third())));
          expect(result.node).toEqual({ name: third().name, isReady: true });
          await specifics.expectJoinedWorker(suite, third());
        },
        timeout,
      );
    }

    it(
      specifics.titles.reset,
      async () => {
        for (const host of [third(), second(), first()]) {
          const result = json<ResetResult>(await edgeadm(['reset', ...sshArgs(host), '--force', '--json']));
          expect(result.hadState).toBe(true);
          expect(await listing(host)).toBe(before.get(host.name));
          expect(processesIn(host).join('\n')).not.toContain('sim-main.ts');
        }
      },
      3 * timeout,
    );
  });
});
