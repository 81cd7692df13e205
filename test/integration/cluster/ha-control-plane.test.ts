/**
 * More control planes (HA) end to end, through the CLI, on three netns+sshd
 * test hosts with the SIMULATED k3s (test/support/sim-k3s, not k3s): `init
 * --control-plane-endpoint --upload-certs` starts the first server with
 * cluster-init and keeps the encrypted server token in the cluster; `join
 * --control-plane --certificate-key` joins a second and a third server
 * (the simulated joining server takes the bootstrap data with the server
 * token and serves the API on its own address, forwarding to the first
 * server's store); a wrong key installs nothing; reset leaves every file
 * tree as before.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import type { JoinResult } from '../../../src/cluster/join.js';
import type { ResetResult } from '../../../src/cluster/reset.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import { clusterCliFor, type ClusterCli } from '../../support/cluster-cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

const CLI_TIMEOUT_MS = 180_000;
/** A fixed certificate key, so that a re-run of init can be checked for "no change". */
const CERTIFICATE_KEY = 'a1'.repeat(32);

let env: TestHosts;
let cli: ClusterCli;
let home: string;
let pkg: string;
let adminKubeconfig: string;
let controlPlaneJoinCommand = '';
const before = new Map<string, string>();

beforeAll(async () => {
  ensureCliBuilt('commands/join.js', ['src']);
  env = await startTestHosts({ count: 3 });
  home = mkdtempSync(join(env.dir, 'cli-home-'));
  cli = clusterCliFor(env, home, CLI_TIMEOUT_MS);
  pkg = (await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
  adminKubeconfig = join(home, 'admin.yaml');
  for (const host of env.targets) before.set(host.name, await listing(host));
}, 180_000);

const edgeadm = (args: string[]): Promise<CliResult> => cli.edgeadm(args);
const sshArgs = (host: TestHost): string[] => cli.sshArgs(host);
const listing = (host: TestHost): Promise<string> => cli.listing(host);
const json = <T>(run: CliResult): T => cli.json<T>(run);

afterAll(async () => {
  await env?.teardown();
});

const first = (): TestHost => env.targets[0]!;
const second = (): TestHost => env.targets[1]!;
const third = (): TestHost => env.targets[2]!;

function joinArgs(host: TestHost, key = CERTIFICATE_KEY): string[] {
  const words = controlPlaneJoinCommand.split(' ');
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
    '--control-plane',
    '--certificate-key',
    key,
    '--json',
    ...sshArgs(host),
  ];
}

function initArgs(): string[] {
  return [
    'init',
    ...sshArgs(first()),
    '--install-pkg-path',
    pkg,
    '--control-plane-endpoint',
    first().address,
    '--upload-certs',
    '--certificate-key',
    CERTIFICATE_KEY,
    '--kubeconfig-out',
    adminKubeconfig,
    '--json',
  ];
}

describe('edgeadm init --upload-certs and join --control-plane on test hosts (simulated k3s)', () => {
  it(
    'init starts an HA-capable first server and prints the control-plane join command',
    async () => {
      const result = json<InitResult>(await edgeadm(initArgs()));
      expect(result.phases.find((p) => p.path === 'upload-certs')?.status).toBe('changed');
      controlPlaneJoinCommand = result.controlPlaneJoinCommand!;
      expect(controlPlaneJoinCommand).toMatch(
        new RegExp(
          `^edgeadm join ${first().address.replaceAll('.', '\\.')}:6443 --token .* --control-plane --certificate-key ${CERTIFICATE_KEY}$`,
        ),
      );
      const config = load(await env.run(first(), 'cat /etc/rancher/k3s/config.yaml')) as Record<string, unknown>;
      expect(config['cluster-init']).toBe(true);
      // The server token is in the cluster only encrypted.
      const client = new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
      const secret = await client.get<{ data: Record<string, string> }>(
        '/api/v1/namespaces/kube-system/secrets/edgeadm-control-plane-join',
      );
      const serverToken = (await env.run(first(), 'cat /var/lib/rancher/k3s/server/token')).trim();
      const stored = Buffer.from(secret!.data['server-token.sealed']!, 'base64').toString('utf8');
      expect(stored).not.toContain(serverToken.split('::')[1]!);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'a re-run of init with the same certificate key changes nothing',
    async () => {
      const result = json<InitResult>(await edgeadm(initArgs()));
      expect(result.isChanged).toBe(false);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'join --control-plane with a wrong certificate key fails before anything reaches the host',
    async () => {
      const run = await edgeadm(joinArgs(second(), 'b2'.repeat(32)));
      expect(run.exitCode).not.toBe(0);
      const error = (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('E_CERTIFICATE_KEY_MISMATCH');
      expect(error.message).toMatch(/^error execution phase discovery: /);
      expect(await listing(second())).toBe(before.get(second().name));
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'join --control-plane adds a second and a third server that serve the API with the cluster CA',
    async () => {
      for (const host of [second(), third()]) {
        const result = json<JoinResult>(await edgeadm(joinArgs(host)));
        expect(result.phases.map((p) => `${p.path}:${p.status}`)).toEqual([
          'preflight:unchanged',
          'discovery:unchanged',
          'package:changed',
          'runtime:skipped',
          'node-join:skipped',
          'control-plane-join:changed',
          'edge:skipped',
          'wait-ready:unchanged',
          'labels:unchanged',
        ]);
        expect(result.node).toEqual({ name: host.name, isReady: true });
        const config = load(await env.run(host, 'cat /etc/rancher/k3s/config.yaml')) as Record<string, unknown>;
        expect(config.server).toBe(`https://${first().address}:6443`);
        expect(String(config.token)).toMatch(/^K10[0-9a-f]{64}::server:/);
      }
      // Each server answers the admin with the one cluster's Nodes, verified with the cluster CA.
      const admin = await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' });
      for (const host of [second(), third()]) {
        const client = new KubeClient({ ...admin, server: `https://${host.address}:6443` });
        const nodes = await client.list<{ metadata: { name: string; labels: Record<string, string> } }>(
          '/api/v1/nodes',
          { labelSelector: 'node-role.kubernetes.io/control-plane=true' },
        );
        expect(nodes.map((n) => n.metadata.name).sort()).toEqual([first().name, second().name, third().name].sort());
      }
    },
    2 * CLI_TIMEOUT_MS,
  );

  it(
    'a re-run of join --control-plane changes nothing',
    async () => {
      const result = json<JoinResult>(await edgeadm(joinArgs(second())));
      expect(result.isChanged).toBe(false);
    },
    CLI_TIMEOUT_MS,
  );

  it(
    'reset on all three servers leaves each file tree as it was before',
    async () => {
      for (const host of [third(), second(), first()]) {
        const result = json<ResetResult>(await edgeadm(['reset', ...sshArgs(host), '--force', '--json']));
        expect(result.hadState).toBe(true);
        expect(await listing(host)).toBe(before.get(host.name));
      }
    },
    3 * CLI_TIMEOUT_MS,
  );
});
