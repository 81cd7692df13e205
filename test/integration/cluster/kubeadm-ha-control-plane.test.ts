/**
 * More control planes (HA) with `--distribution kubeadm`, end to end
 * through the CLI, on three netns+sshd test hosts with the SIMULATED
 * kubeadm distribution (test/support/sim-kubeadm: stand-in kubeadm, kubelet
 * and containerd; not Kubernetes): `init --control-plane-endpoint
 * --upload-certs` sets the endpoint in the ClusterConfiguration and has
 * (simulated) kubeadm upload the CA into kube-system/kubeadm-certs,
 * encrypted with the certificate key edgeadm made and never logged; `init
 * phase upload-certs` uploads again with a fresh key; the old key is then
 * refused during discovery with nothing installed; `join --control-plane`
 * with the new key runs kubeadm join with a JoinConfiguration carrying
 * controlPlane (the simulated kubeadm downloads and decrypts the CA itself,
 * and the new API server forwards to the first one's store); a worker
 * joins; reset leaves every file tree as before.
 */
import { createDecipheriv } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import type { JoinResult } from '../../../src/cluster/join.js';
import type { ResetResult } from '../../../src/cluster/reset.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCliFor, processesIn, type ClusterCli } from '../../support/cluster-cli.js';
import { buildSimKubeadmPackage } from '../../support/sim-kubeadm/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

/** A CLI run may start several simulated services and wait for them on 2 busy cores. */
const CLI_TIMEOUT_MS = 240_000;
/** One test may run the CLI on several hosts. */
const TEST_TIMEOUT_MS = 600_000;

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
  ensureCliBuilt('commands/init.js', ['src', 'test/support/sim-kubeadm']);
  env = await startTestHosts({ count: 3 });
  home = mkdtempSync(join(env.dir, 'cli-home-'));
  cli = clusterCliFor(env, home, CLI_TIMEOUT_MS);
  pkg = (await buildSimKubeadmPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
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
const worker = (): TestHost => env.targets[2]!;

async function admin(server?: string): Promise<KubeClient> {
  const credentials = await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' });
  return new KubeClient(server ? { ...credentials, server } : credentials);
}

/** kubeadm's encryption, undone independently of edgeadm's code: nonce first, tag last. */
function decryptEntry(entry: string, keyHex: string): string {
  const bytes = Buffer.from(entry, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', Buffer.from(keyHex, 'hex'), bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(bytes.length - 16));
  return Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]).toString('utf8');
}

async function kubeadmCerts(): Promise<{ data: Record<string, string>; annotations: Record<string, string> }> {
  const secret = await (
    await admin()
  ).get<{ data: Record<string, string>; metadata: { annotations?: Record<string, string> } }>(
    '/api/v1/namespaces/kube-system/secrets/kubeadm-certs',
  );
  return { data: secret!.data, annotations: secret!.metadata.annotations ?? {} };
}

const initArgs = (): string[] => [
  'init',
  ...sshArgs(first()),
  '--distribution',
  'kubeadm',
  '--install-pkg-path',
  pkg,
  '--control-plane-endpoint',
  first().address,
  '--upload-certs',
  '--kubeconfig-out',
  adminKubeconfig,
  '--json',
];

function joinArgs(host: TestHost, options: { key?: string } = {}): string[] {
  const words = (options.key ? controlPlaneJoinCommand : joinCommand).split(' ');
  const at = (flag: string) => words[words.indexOf(flag) + 1]!;
  return [
    'join',
    words[2]!,
    '--token',
    at('--token'),
    '--discovery-token-ca-cert-hash',
    at('--discovery-token-ca-cert-hash'),
    '--install-pkg-path',
    pkg,
    '--distribution',
    at('--distribution'),
    ...(options.key ? ['--control-plane', '--certificate-key', options.key] : []),
    '--json',
    ...sshArgs(host),
  ];
}

describe('edgeadm init --upload-certs and join --control-plane with --distribution kubeadm (simulated kubeadm)', () => {
  it(
    'init --dry-run plans the upload with kubeadm, the key in a file, and changes nothing',
    async () => {
      const result = json<InitResult>(await edgeadm([...initArgs(), '--dry-run']));
      const plan = result.plan!.join('\n');
      expect(plan).toContain(
        '[upload-certs] Would write /etc/kubernetes/edgeadm-kubeadm-upload-certs.yaml (mode 0600, with the certificate key), run /usr/local/bin/kubeadm init phase upload-certs --upload-certs --skip-certificate-key-print --config /etc/kubernetes/edgeadm-kubeadm-upload-certs.yaml',
      );
      expect(plan).not.toContain(result.certificateKey!);
      expect(await listing(first())).toBe(before.get(first().name));
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'init sets the control-plane endpoint, has kubeadm upload the encrypted CA, and prints the control-plane join command',
    async () => {
      const result = json<InitResult>(await edgeadm([...initArgs(), '--log-file', initLog]));
      expect(result.phases.map((p) => `${p.path}:${p.status}`)).toContain('upload-certs:changed');
      joinCommand = result.joinCommand!;
      controlPlaneJoinCommand = result.controlPlaneJoinCommand!;
      firstKey = result.certificateKey!;
      expect(firstKey).toMatch(/^[0-9a-f]{64}$/);
      expect(controlPlaneJoinCommand).toBe(`${joinCommand} --control-plane --certificate-key ${firstKey}`);
      expect(joinCommand).toMatch(
        new RegExp(`^edgeadm join ${first().address.replaceAll('.', '\\.')}:6443 .* --distribution kubeadm$`),
      );
      // The key edgeadm made reaches neither the run log nor a file left on the host.
      expect(readFileSync(initLog, 'utf8')).not.toContain(firstKey);
      const initConfig = await env.run(first(), 'cat /etc/kubernetes/edgeadm-kubeadm-init.yaml');
      expect(initConfig).not.toContain(firstKey);
      expect(await env.run(first(), 'ls /etc/kubernetes')).not.toContain('upload-certs');
      const cluster = (loadAll(initConfig) as Array<Record<string, unknown>>).find(
        (doc) => doc?.kind === 'ClusterConfiguration',
      )!;
      expect(cluster.controlPlaneEndpoint).toBe(`${first().address}:6443`);
      expect((cluster.apiServer as { certSANs: string[] }).certSANs).toContain(first().address);
      // kube-system/kubeadm-certs holds the CA key only encrypted, under the printed key.
      const { data, annotations } = await kubeadmCerts();
      const caKey = await env.run(first(), 'cat /etc/kubernetes/pki/ca.key');
      expect(Buffer.from(data['ca.key']!, 'base64').toString('latin1')).not.toContain('PRIVATE KEY');
      expect(decryptEntry(data['ca.key']!, firstKey)).toBe(caKey);
      expect(Date.parse(annotations['edgeadm.io/expires']!)).toBeGreaterThan(Date.now() + 60 * 60_000);
      const binding = await (
        await admin()
      ).get<{ subjects: Array<{ name: string }> }>(
        '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/kubeadm:kubeadm-certs',
      );
      expect(binding?.subjects.map((s) => s.name)).toEqual(['system:bootstrappers:kubeadm:default-node-token']);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a re-run of init with the printed certificate key changes nothing',
    async () => {
      const result = json<InitResult>(await edgeadm([...initArgs(), '--certificate-key', firstKey]));
      expect(result.isChanged).toBe(false);
      expect(result.phases.find((p) => p.path === 'upload-certs')?.status).toBe('unchanged');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'init phase upload-certs uploads again with a fresh key',
    async () => {
      const result = json<InitResult>(
        await edgeadm([
          'init',
          'phase',
          'upload-certs',
          ...initArgs().slice(1), // the same flags as init
        ]),
      );
      freshKey = result.certificateKey!;
      expect(freshKey).toMatch(/^[0-9a-f]{64}$/);
      expect(freshKey).not.toBe(firstKey);
      expect(result.phases).toEqual([expect.objectContaining({ path: 'upload-certs', status: 'changed' })]);
      const { data } = await kubeadmCerts();
      expect(decryptEntry(data['ca.crt']!, freshKey)).toContain('BEGIN CERTIFICATE');
      expect(() => decryptEntry(data['ca.crt']!, firstKey)).toThrow();
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'join --control-plane with the replaced key fails during discovery with nothing installed',
    async () => {
      const run = await edgeadm(joinArgs(second(), { key: firstKey }));
      expect(run.exitCode).not.toBe(0);
      const error = (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('E_CERTIFICATE_KEY_MISMATCH');
      expect(error.message).toMatch(/^error execution phase discovery: /);
      expect(await listing(second())).toBe(before.get(second().name));
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'join --control-plane after the upload expired fails during discovery with nothing installed',
    async () => {
      const path = '/api/v1/namespaces/kube-system/secrets/kubeadm-certs';
      const { annotations } = await kubeadmCerts();
      const expires = annotations['edgeadm.io/expires']!;
      await (
        await admin()
      ).mergePatch(path, {
        metadata: { annotations: { 'edgeadm.io/expires': new Date(Date.now() - 1000).toISOString() } },
      });
      try {
        const run = await edgeadm(joinArgs(second(), { key: freshKey }));
        expect(run.exitCode).not.toBe(0);
        expect((JSON.parse(run.stdout) as { error: { code: string } }).error.code).toBe('E_CONTROL_PLANE_JOIN_EXPIRED');
        expect(await listing(second())).toBe(before.get(second().name));
      } finally {
        await (await admin()).mergePatch(path, { metadata: { annotations: { 'edgeadm.io/expires': expires } } });
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'join --control-plane with the fresh key runs kubeadm join with controlPlane, and the new API server serves the cluster',
    async () => {
      const result = json<JoinResult>(await edgeadm(joinArgs(second(), { key: freshKey })));
      expect(result.phases.map((p) => `${p.path}:${p.status}`)).toEqual([
        'preflight:unchanged',
        'discovery:unchanged',
        'package:changed',
        'runtime:changed',
        'node-join:skipped',
        'control-plane-join:changed',
        'edge:skipped',
        'wait-ready:unchanged',
        'labels:unchanged',
      ]);
      expect(result.node).toEqual({ name: second().name, isReady: true });
      const [joinConfig] = loadAll(await env.run(second(), 'cat /etc/kubernetes/edgeadm-kubeadm-join.yaml')) as Array<{
        kind: string;
        controlPlane: { certificateKey: string; localAPIEndpoint: { advertiseAddress: string; bindPort: number } };
        discovery: { bootstrapToken: { apiServerEndpoint: string } };
      }>;
      expect(joinConfig!.kind).toBe('JoinConfiguration');
      expect(joinConfig!.controlPlane).toEqual({
        certificateKey: freshKey,
        localAPIEndpoint: { advertiseAddress: second().address, bindPort: 6443 },
      });
      expect(joinConfig!.discovery.bootstrapToken.apiServerEndpoint).toBe(`${first().address}:6443`);
      // The simulated kubeadm downloaded the cluster CA (key included) with the certificate key.
      for (const file of ['ca.crt', 'ca.key']) {
        expect(await env.run(second(), `cat /etc/kubernetes/pki/${file}`)).toBe(
          await env.run(first(), `cat /etc/kubernetes/pki/${file}`),
        );
      }
      // The second API server answers the admin, verified with the cluster CA, with the one cluster's Nodes.
      const client = await admin(`https://${second().address}:6443`);
      const nodes = await client.list<{ metadata: { name: string } }>('/api/v1/nodes', {
        labelSelector: 'node-role.kubernetes.io/control-plane',
      });
      expect(nodes.map((n) => n.metadata.name).sort()).toEqual([first().name, second().name].sort());
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a re-run of join --control-plane changes nothing',
    async () => {
      const result = json<JoinResult>(await edgeadm(joinArgs(second(), { key: freshKey })));
      expect(result.isChanged).toBe(false);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a worker joins with the printed join command',
    async () => {
      const result = json<JoinResult>(await edgeadm(joinArgs(worker())));
      expect(result.node).toEqual({ name: worker().name, isReady: true });
      expect(await env.run(worker(), 'ls /etc/kubernetes/pki')).toBe('ca.crt\n');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'reset on all three hosts leaves each file tree as it was before',
    async () => {
      for (const host of [worker(), second(), first()]) {
        const result = json<ResetResult>(await edgeadm(['reset', ...sshArgs(host), '--force', '--json']));
        expect(result.hadState).toBe(true);
        expect(await listing(host)).toBe(before.get(host.name));
        expect(processesIn(host).join('\n')).not.toContain('sim-main.ts');
      }
    },
    3 * TEST_TIMEOUT_MS,
  );
});
