/**
 * `register-cloud --host`: the agent installed as a service on a netns+sshd
 * test host, connecting out to a hub on the test network; kubectl through
 * the hub reaches the edge cluster (the SIMULATED API server). The hosts
 * have no systemd, so the harness asks for the direct service manager
 * (EDGEADM_SERVICE_MANAGER=direct). The "edgeadm binary" installed on the
 * host is a TEST LAUNCHER script that runs the CLI built from this
 * repository (visible inside the test hosts), not the single binary.
 */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { REPO_ROOT, runCli, type CliResult } from '../../support/cli.js';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { TMPFS_DIRS, startTestHosts, type TestHost, type TestHosts } from '../../support/test-hosts.js';
import {
  freePort,
  hubJson,
  kubectlVia,
  startCli,
  waitFor,
  waitForState,
  type BackgroundCli,
  type HubProcess,
} from './hub-fixture.js';
import { printedBy } from '../../support/run-output.js';

const CLI_TIMEOUT_MS = 120_000;
const DATA_DIR = '/var/lib/edgeadm/agent';

let env: TestHosts;
let home: string;
let hub: HubProcess;
let api: SimApiServer;
let kubeconfig: string;
let launcher: string;
let broken: string;
/** The second host's listing before any agent was installed there. */
let pristine = '';

/** Every path (with type and mode) under the directories a test host has on tmpfs. */
function listing(host: TestHost): Promise<string> {
  return env.run(host, `find ${TMPFS_DIRS.join(' ')} -printf '%p %y %m\\n' | sort`);
}

async function startHubOn(address: string): Promise<HubProcess> {
  const dataDir = mkdtempSync(join(env.dir, 'hub-'));
  const port = await freePort();
  const cli: BackgroundCli = startCli([
    'hub',
    'serve',
    '--listen',
    `${address}:${port}`,
    '--advertise-address',
    address,
    '--data-dir',
    dataDir,
  ]);
  const caPin = (await cli.waitForOutput(/hub CA pin: (sha256:[0-9a-f]{64})/))[1] ?? '';
  return { ...cli, dataDir, port, adminConfig: join(dataDir, 'admin.yaml'), caPin };
}

async function register(target: TestHost, name: string, binary: string): Promise<CliResult> {
  const { token } = await hubJson<{ token: string }>(['hub', 'token', 'create'], hub.adminConfig);
  return runCli(
    [
      'register-cloud',
      `${rootAddress()}:${hub.port}`,
      '--token',
      token,
      '--hub-ca-cert-hash',
      hub.caPin,
      '--name',
      name,
      '--kubeconfig',
      kubeconfig,
      '--create-service-account',
      '--host',
      `root@${target.address}`,
      '--ssh-key',
      env.keys.root,
      '--ssh-known-hosts',
      env.knownHostsFile,
      '--edgeadm-binary',
      binary,
      '--discovery-timeout',
      '10s',
      '--json',
    ],
    {
      env: { HOME: home, EDGEADM_HOME: join(home, '.edgeadm'), SSH_AUTH_SOCK: '', EDGEADM_SERVICE_MANAGER: 'direct' },
      timeoutMs: CLI_TIMEOUT_MS,
    },
  );
}

/** The root namespace's address on the test network. */
function rootAddress(): string {
  return env.targets[0]!.address.replace(/\.\d+$/, '.1');
}

beforeAll(async () => {
  ensureCliBuilt('index.js', ['src']);
  env = await startTestHosts({ count: 2 });
  home = mkdtempSync(join(env.dir, 'cli-home-'));
  api = await startSimApiServer({ host: rootAddress(), sans: [rootAddress()], gitVersion: 'v1.30.4+sim' });
  kubeconfig = join(home, 'admin.kubeconfig');
  writeFileSync(kubeconfig, api.kubeconfig(), { mode: 0o600 });
  hub = await startHubOn(rootAddress());
  launcher = join(env.dir, 'edgeadm-test-launcher');
  writeFileSync(
    launcher,
    [
      '#!/bin/sh',
      '# TEST LAUNCHER (not the edgeadm single binary): runs the CLI built from the repository.',
      // EDGEADM_HOME comes from the unit's Environment=, which the direct service manager applies as systemd does.
      `exec ${process.execPath} ${join(REPO_ROOT, 'bin/run.js')} "$@"`,
      '',
    ].join('\n'),
  );
  chmodSync(launcher, 0o755);
  broken = join(env.dir, 'edgeadm-broken');
  writeFileSync(broken, '#!/bin/sh\necho "this edgeadm cannot run" >&2\nexit 1\n');
  chmodSync(broken, 0o755);
}, 180_000);

afterAll(async () => {
  await hub?.stop();
  await api?.stop();
  await env?.teardown();
});

describe('register-cloud --host (agent installed as a service on a test host)', { timeout: 300_000 }, () => {
  it('installs the agent; it connects to the hub and kubectl through the hub works', async () => {
    const target = env.targets[0]!;
    const run = await register(target, 'site-1', launcher);
    expect(run.exitCode, printedBy(run)).toBe(0);
    const result = JSON.parse(run.stdout) as { changed: string[]; service: string; wasRegistered: boolean };
    expect(result.service).toBe('started');
    expect(result.changed).toEqual(
      expect.arrayContaining([
        '/usr/local/bin/edgeadm',
        `${DATA_DIR}/client.key`,
        '/etc/systemd/system/edgeadm-tunnel-agent.service',
      ]),
    );
    await waitForState(hub, 'site-1', 'Connected');
    const version = await kubectlVia(hub.adminConfig, 'site-1', ['version', '-o', 'json']);
    expect(version.exitCode, printedBy(version)).toBe(0);
    expect(JSON.parse(version.stdout)).toMatchObject({ serverVersion: { gitVersion: 'v1.30.4+sim' } });
  });

  it('keeps the credentials private on the host, and no admin credential', async () => {
    const target = env.targets[0]!;
    const modes = await env.run(target, `stat -c '%a %U:%G %n' ${DATA_DIR} ${DATA_DIR}/*`);
    expect(modes).toContain(`700 edgeadm-agent:edgeadm-agent ${DATA_DIR}\n`);
    for (const file of ['agent.yaml', 'client.key', 'client.crt', 'upstream.kubeconfig']) {
      expect(modes).toContain(`600 edgeadm-agent:edgeadm-agent ${DATA_DIR}/${file}`);
    }
    const everything = await env.run(target, `cat ${DATA_DIR}/*.yaml ${DATA_DIR}/*.kubeconfig`);
    expect(everything).not.toContain(api.adminToken);
    const unit = await env.run(target, 'cat /etc/systemd/system/edgeadm-tunnel-agent.service');
    expect(unit).toMatch(/^ExecStart=\/usr\/local\/bin\/edgeadm agent tunnel --data-dir \/var\/lib\/edgeadm\/agent$/m);
  });

  it('runs the agent as its own unprivileged user, which can read no other credential', async () => {
    const target = env.targets[0]!;
    const user = await env.run(
      target,
      // The pid file names the launcher of the direct service manager (root); the agent is its child.
      'ps -o user= --ppid "$(cat /var/lib/edgeadm/services/edgeadm-tunnel-agent.service.pid)"',
    );
    expect(user.trim()).toBe('edgeadm-agent');
    expect(await env.run(target, 'getent passwd edgeadm-agent | cut -d: -f6,7')).toBe(
      '/nonexistent:/usr/sbin/nologin\n',
    );
    // What root keeps to itself stays out of the agent's reach.
    const probe = await env.run(
      target,
      'setpriv --reuid=edgeadm-agent --regid=edgeadm-agent --init-groups -- cat /etc/shadow 2>&1 || true',
    );
    expect(probe).toContain('Permission denied');
  });

  it('changes nothing when run again', async () => {
    const target = env.targets[0]!;
    const pidBefore = await env.run(target, 'cat /var/lib/edgeadm/services/edgeadm-tunnel-agent.service.pid');
    const filesBefore = await env.run(target, `sha256sum ${DATA_DIR}/client.* ${DATA_DIR}/*.kubeconfig`);
    const run = await register(target, 'site-1', launcher);
    expect(run.exitCode, printedBy(run)).toBe(0);
    const result = JSON.parse(run.stdout) as { changed: string[]; service: string; wasRegistered: boolean };
    expect(result).toMatchObject({ changed: [], service: 'already-running', wasRegistered: true });
    expect(await env.run(target, 'cat /var/lib/edgeadm/services/edgeadm-tunnel-agent.service.pid')).toBe(pidBefore);
    expect(await env.run(target, `sha256sum ${DATA_DIR}/client.* ${DATA_DIR}/*.kubeconfig`)).toBe(filesBefore);
    await waitForState(hub, 'site-1', 'Connected');
  });

  it('hands a data directory written by root (an install from before the agent had its own user) over to the agent', async () => {
    const target = env.targets[0]!;
    await env.run(target, `mkdir -p ${DATA_DIR}/logs && chown -R root:root ${DATA_DIR}`);
    const run = await register(target, 'site-1', launcher);
    expect(run.exitCode, printedBy(run)).toBe(0);
    const owners = await env.run(target, `find ${DATA_DIR} -printf '%u:%g %p\\n' | sort`);
    expect(owners.trim().split('\n').length).toBeGreaterThan(4);
    expect(owners).not.toContain('root:root');
    await waitForState(hub, 'site-1', 'Connected');
  });

  it('leaves nothing behind when the agent cannot start, and a re-run then installs it', async () => {
    const target = env.targets[1]!;
    const before = await listing(target);
    pristine = before;
    const failed = await register(target, 'site-2', broken);
    expect(failed.exitCode).not.toBe(0);
    expect(JSON.parse(failed.stdout)).toMatchObject({ error: { code: 'E_AGENT_INSTALL' } });
    // What the agent said before it stopped is in the error: its log went with the undo.
    expect((JSON.parse(failed.stdout) as { error: { hints: string[] } }).error.hints.join('\n')).toContain(
      'this edgeadm cannot run',
    );
    expect(await listing(target)).toBe(before);
    // The user the failed run made went with it.
    expect(await env.run(target, 'getent passwd edgeadm-agent || echo none'), failed.stderr).toBe('none\n');
    const fixed = await register(target, 'site-2', launcher);
    expect(fixed.exitCode, printedBy(fixed)).toBe(0);
    // The registration made by the failed run was kept and installed: the hub was not asked again.
    expect(JSON.parse(fixed.stdout)).toMatchObject({ wasRegistered: true, service: 'started' });
    await waitForState(hub, 'site-2', 'Connected');
    await waitFor('the agent on site-2 to answer', async () => {
      const version = await kubectlVia(hub.adminConfig, 'site-2', ['version', '-o', 'json']);
      return version.exitCode === 0 ? true : undefined;
    });
  });

  it('agent uninstall takes the agent off the host, all but the edgeadm binary, and says the hub still has it (newcomer point 12)', async () => {
    const target = env.targets[1]!;
    const uninstall = (): Promise<CliResult> =>
      runCli(
        [
          'agent',
          'uninstall',
          '--host',
          `root@${target.address}`,
          '--ssh-key',
          env.keys.root,
          '--ssh-known-hosts',
          env.knownHostsFile,
        ],
        {
          env: {
            HOME: home,
            EDGEADM_HOME: join(home, '.edgeadm'),
            SSH_AUTH_SOCK: '',
            EDGEADM_SERVICE_MANAGER: 'direct',
          },
          timeoutMs: CLI_TIMEOUT_MS,
        },
      );
    const first = await uninstall();
    expect(first.exitCode, printedBy(first)).toBe(0);
    expect(first.stdout).toContain('edgeadm hub clusters delete site-2');
    await waitForState(hub, 'site-2', 'Disconnected');
    const withoutBinary = (text: string): string =>
      text
        .split('\n')
        .filter((line) => !line.startsWith('/usr/local/bin/edgeadm '))
        .join('\n');
    expect(withoutBinary(await listing(target))).toBe(withoutBinary(pristine));
    expect(await env.run(target, 'getent passwd edgeadm-agent || echo none')).toBe('none\n');
    const second = await uninstall();
    expect(second.exitCode, printedBy(second)).toBe(0);
    expect(second.stdout).toContain('no tunnel agent on');
  });
});
