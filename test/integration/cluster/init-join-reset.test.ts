/**
 * The main job end to end, through the CLI as operators run it, on three
 * netns+sshd test hosts with the SIMULATED k3s (test/support/sim-k3s, not
 * k3s) shipped in a real install package: init --dry-run changes nothing;
 * init on one host; join failures (wrong token, wrong pin, unreachable
 * control plane, preflight) install nothing; join on two more; token
 * create/list/delete; reset ×3 leaves every host's file tree as before.
 *
 * The hosts have no systemd, so the harness asks for the direct service
 * manager explicitly (EDGEADM_SERVICE_MANAGER=direct).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InitResult } from '../../../src/cluster/init.js';
import type { JoinResult } from '../../../src/cluster/join.js';
import type { ResetResult } from '../../../src/cluster/reset.js';
import { KubeClient } from '../../../src/kube/client.js';
import { kubeCredentialsOf } from '../../../src/kube/kubeconfig.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import type { CliResult } from '../../support/cli.js';
import {
  clusterCli,
  json,
  listing as hostListing,
  processesIn,
  sshArgs as hostSshArgs,
} from '../../support/cluster-cli.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';

/** A CLI run may start a simulated server and wait for it on 2 busy cores. */
const CLI_TIMEOUT_MS = 120_000;

let env: TestHosts;
let home: string;
let pkg: string;
let adminKubeconfig: string;
const before = new Map<string, string>();

beforeAll(async () => {
  ensureCliBuilt('commands/init.js', ['src', 'test/support/sim-k3s']);
  env = await startTestHosts({ count: 3 });
  home = mkdtempSync(join(env.dir, 'cli-home-'));
  pkg = (await buildSimK3sPackage(mkdtempSync(join(env.dir, 'pkg-')))).file;
  adminKubeconfig = join(home, 'admin.yaml');
  for (const host of env.targets) before.set(host.name, await listing(host));
}, 180_000);

afterAll(async () => {
  await env?.teardown();
});

const edgeadm = (args: string[]): Promise<CliResult> => clusterCli(home, CLI_TIMEOUT_MS)(args);
const sshArgs = (target: TestHost): string[] => hostSshArgs(env, target);
const listing = (host: TestHost): Promise<string> => hostListing(env, host);

function errorOf(run: CliResult): { code: string; message: string } {
  return (JSON.parse(run.stdout) as { error: { code: string; message: string } }).error;
}

const controlPlane = (): TestHost => env.targets[0]!;
const worker1 = (): TestHost => env.targets[1]!;
const worker2 = (): TestHost => env.targets[2]!;
let joinCommand = '';

describe('edgeadm init, join, token and reset on test hosts (simulated k3s)', () => {
  it('init --dry-run prints the plan per phase, with the binaries and the unit, and changes nothing', async () => {
    const run = await edgeadm(['init', ...sshArgs(controlPlane()), '--install-pkg-path', pkg, '--dry-run', '--json']);
    const result = json<InitResult>(run);
    expect(result.isDryRun).toBe(true);
    const plan = result.plan!.join('\n');
    expect(plan).toMatch(/\[package\] .*install \/usr\/local\/bin\/k3s/);
    expect(plan).toMatch(/\[control-plane\] .*\/etc\/systemd\/system\/k3s\.service/);
    expect(plan).toMatch(/\[control-plane\] .*\/etc\/rancher\/k3s\/config\.yaml/);
    expect(plan).toContain('[bootstrap-token] Would create the bootstrap token Secret');
    // The progress a person reads speaks of what would be done, never of what was done.
    const shown = await edgeadm(['init', ...sshArgs(controlPlane()), '--install-pkg-path', pkg, '--dry-run']);
    const progress = shown.stdout + shown.stderr;
    expect(progress).toMatch(/\[package\] would upload /);
    expect(progress).not.toMatch(/\[package\] (uploaded|installed|unpacked into) /);
    expect(await listing(controlPlane())).toBe(before.get(controlPlane().name));
  });

  it('init installs the control plane and prints the join command', async () => {
    const run = await edgeadm([
      'init',
      ...sshArgs(controlPlane()),
      '--install-pkg-path',
      pkg,
      '--kubeconfig-out',
      adminKubeconfig,
      '--json',
    ]);
    const result = json<InitResult>(run);
    expect(result.phases.map((p) => `${p.path}:${p.status}`)).toEqual([
      'preflight:unchanged',
      'package:changed',
      'runtime:skipped',
      'control-plane:changed',
      'wait-ready:unchanged',
      'bootstrap-token:changed',
      'upload-certs:skipped',
      'edge-addons:skipped',
      'show-join-command:changed',
    ]);
    expect(result.joinCommand).toMatch(
      new RegExp(
        `^edgeadm join ${controlPlane().address.replaceAll('.', '\\.')}:6443 --token [a-z0-9]{6}\\.[a-z0-9]{16} --discovery-token-ca-cert-hash sha256:[0-9a-f]{64} --install-pkg-path `,
      ),
    );
    joinCommand = result.joinCommand!;
    const client = new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
    const node = await client.get<{ metadata: { name: string } }>(`/api/v1/nodes/${controlPlane().name}`);
    expect(node?.metadata.name).toBe(controlPlane().name);
  });

  it('a re-run of init changes nothing and says every phase is already done', async () => {
    const run = await edgeadm([
      'init',
      ...sshArgs(controlPlane()),
      '--install-pkg-path',
      pkg,
      '--kubeconfig-out',
      adminKubeconfig,
      '--json',
    ]);
    const result = json<InitResult>(run);
    expect(result.isChanged).toBe(false);
    expect(result.phases.filter((p) => p.status !== 'skipped').every((p) => p.status === 'unchanged')).toBe(true);
    expect(result.joinCommand).toBe(joinCommand);
  });

  it('init phase show-join-command merges the admin kubeconfig into ~/.kube/config as a new context', async () => {
    const run = await edgeadm([
      'init',
      'phase',
      'show-join-command',
      ...sshArgs(controlPlane()),
      '--install-pkg-path',
      pkg,
      '--json',
    ]);
    const result = json<InitResult>(run);
    expect(result.phases.map((p) => p.path)).toEqual(['show-join-command']);
    const context = `edgeadm-${controlPlane().name}`;
    expect(result.kubeconfig).toEqual({ path: join(home, '.kube', 'config'), context, isMerged: true });
    const merged = readFileSync(join(home, '.kube', 'config'), 'utf8');
    const credentials = await kubeCredentialsOf(merged, { what: 'merged' });
    expect(credentials.contextName).toBe(context);
    expect(await new KubeClient(credentials).get('/api/v1/namespaces/kube-system')).toBeDefined();
  });

  it('init phase edge-addons --enable-edge applies the edge addon manifests (edge node settings)', async () => {
    const args = [
      'init',
      'phase',
      'edge-addons',
      ...sshArgs(controlPlane()),
      '--install-pkg-path',
      pkg,
      '--enable-edge',
    ];
    expect(json<InitResult>(await edgeadm([...args, '--json'])).phases).toMatchObject([
      { path: 'edge-addons', status: 'changed' },
    ]);
    expect(json<InitResult>(await edgeadm([...args, '--json'])).phases).toMatchObject([
      { path: 'edge-addons', status: 'unchanged' },
    ]);
    const client = new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
    const config = await client.get<{ data: Record<string, string> }>(
      '/api/v1/namespaces/kube-system/configmaps/edgeadm-edge',
    );
    expect(config?.data.nodeTaints).toBe('edgeadm.io/edge=true:NoSchedule');
  });

  function joinArgs(overrides: { token?: string; hash?: string; endpoint?: string } = {}): string[] {
    const words = joinCommand.split(' ');
    const at = (flag: string) => words[words.indexOf(flag) + 1]!;
    return [
      'join',
      overrides.endpoint ?? words[2]!,
      '--token',
      overrides.token ?? at('--token'),
      '--discovery-token-ca-cert-hash',
      overrides.hash ?? at('--discovery-token-ca-cert-hash'),
      '--install-pkg-path',
      pkg,
      '--discovery-timeout',
      '3s',
      '--json',
    ];
  }

  it('join with a token the cluster does not know fails in discovery and installs nothing', async () => {
    const run = await edgeadm([...joinArgs({ token: 'zzzzzz.zzzzzzzzzzzzzzzz' }), ...sshArgs(worker1())]);
    expect(run.exitCode).not.toBe(0);
    const error = errorOf(run);
    expect(error.message).toMatch(/^error execution phase discovery: /);
    expect(error.code).toMatch(/^E_DISCOVERY_/);
    expect(await listing(worker1())).toBe(before.get(worker1().name));
  });

  it('join with a wrong CA pin fails in discovery and installs nothing', async () => {
    const run = await edgeadm([...joinArgs({ hash: `sha256:${'0'.repeat(64)}` }), ...sshArgs(worker1())]);
    expect(errorOf(run).code).toBe('E_DISCOVERY_PIN_MISMATCH');
    expect(await listing(worker1())).toBe(before.get(worker1().name));
  });

  it('join against an unreachable control plane times out in discovery and installs nothing', async () => {
    const run = await edgeadm([...joinArgs({ endpoint: `${env.unreachableAddress}:6443` }), ...sshArgs(worker1())]);
    expect(errorOf(run).code).toBe('E_DISCOVERY_TIMEOUT');
    expect(await listing(worker1())).toBe(before.get(worker1().name));
  });

  it('join on a host that fails preflight stops with exit code 2 and installs nothing', async () => {
    // Something else holds the kubelet port.
    await env.run(
      worker2(),
      `setsid nohup ${process.execPath} -e "require('net').createServer().listen(10250)" >/dev/null 2>&1 & echo $! > /run/holder.pid; sleep 1`,
    );
    try {
      const run = await edgeadm([...joinArgs(), ...sshArgs(worker2())]);
      expect(run.exitCode).toBe(2);
      expect(errorOf(run).message).toContain('[ERROR port-10250]');
      expect(await listing(worker2())).toBe(before.get(worker2().name));
    } finally {
      await env.run(worker2(), 'kill "$(cat /run/holder.pid)"; rm -f /run/holder.pid');
    }
  });

  it('join --dry-run runs the real discovery, prints the plan and changes nothing', async () => {
    const result = json<JoinResult>(await edgeadm([...joinArgs(), ...sshArgs(worker1()), '--dry-run']));
    expect(result.server).toBe(`https://${controlPlane().address}:6443`);
    const plan = result.plan!.join('\n');
    expect(plan).toMatch(/\[package\] .*install \/usr\/local\/bin\/k3s/);
    expect(plan).toMatch(/\[node-join\] .*\/etc\/systemd\/system\/k3s-agent\.service/);
    expect(await listing(worker1())).toBe(before.get(worker1().name));
  });

  it('join adds two nodes that become Ready, with their labels', async () => {
    const runs = await Promise.all(
      [worker1(), worker2()].map((host) =>
        edgeadm([...joinArgs(), ...sshArgs(host), '--node-labels', 'site=store-42']),
      ),
    );
    for (const [index, run] of runs.entries()) {
      const result = json<JoinResult>(run);
      expect(result.node).toEqual({ name: env.targets[index + 1]!.name, isReady: true });
    }
    const client = new KubeClient(await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' }));
    const nodes = await client.list<{ metadata: { name: string; labels?: Record<string, string> } }>('/api/v1/nodes', {
      labelSelector: 'site=store-42',
    });
    expect(nodes.map((n) => n.metadata.name).sort()).toEqual([worker1().name, worker2().name].sort());
  });

  it('token create, list and delete work against the cluster, and a new token can discover', async () => {
    const kube = ['--kubeconfig', adminKubeconfig];
    const created = json<{ token: string; id: string; joinCommand: string }>(
      await edgeadm([
        'token',
        'create',
        ...kube,
        '--ttl',
        '1h',
        '--description',
        'store 42',
        '--print-join-command',
        '--json',
      ]),
    );
    expect(created.joinCommand).toContain(`--token ${created.token}`);
    const listed = json<{ tokens: Array<{ id: string; description?: string }> }>(
      await edgeadm(['token', 'list', ...kube, '--json']),
    );
    expect(listed.tokens.find((t) => t.id === created.id)?.description).toBe('store 42');
    expect(JSON.stringify(listed)).not.toContain(created.token);
    const words = created.joinCommand.split(' ');
    const discovered = await edgeadm([
      'join',
      'phase',
      'discovery',
      words[2]!,
      '--token',
      created.token,
      '--discovery-token-ca-cert-hash',
      words[words.indexOf('--discovery-token-ca-cert-hash') + 1]!,
      '--json',
    ]);
    expect(discovered.exitCode, discovered.stderr).toBe(0);
    json(await edgeadm(['token', 'delete', ...kube, created.id, '--json']));
    const after = json<{ tokens: Array<{ id: string }> }>(await edgeadm(['token', 'list', ...kube, '--json']));
    expect(after.tokens.map((t) => t.id)).not.toContain(created.id);
  });

  it('reset on all three hosts leaves each file tree as it was before init', async () => {
    const hosts = [worker1(), worker2(), controlPlane()];
    const dry = json<ResetResult>(await edgeadm(['reset', ...sshArgs(worker1()), '--dry-run', '--json']));
    expect(dry.plan!.join('\n')).toContain('/usr/local/bin/k3s');
    for (const host of hosts) {
      const result = json<ResetResult>(await edgeadm(['reset', ...sshArgs(host), '--force', '--json']));
      expect(result.hadState).toBe(true);
      expect(await listing(host)).toBe(before.get(host.name));
      expect(processesIn(host).join('\n')).not.toContain('sim-main.ts');
    }
  });
});
