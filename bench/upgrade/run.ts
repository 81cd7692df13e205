/**
 * Upgrade benchmark: `edgeadm upgrade apply` of one control plane, on the
 * SIMULATED distributions of the test suite (test/support/sim-k3s and
 * sim-kubeadm: stand-ins, not k3s or Kubernetes) on a netns+sshd test host.
 *
 *   npm run bench:upgrade                                  (as root: it starts test hosts)
 *   npm run bench:upgrade -- --distributions kubeadm --rounds 3
 *   npm run bench:upgrade -- --ha                          (an HA control plane of three)
 *
 * Per distribution and round, on a fresh control plane initialised at the
 * old version:
 * - upgrade: the wall time of `upgrade apply` to the next minor, and the
 *   time its API was unavailable, polled every 100 ms (GET /readyz with the
 *   admin kubeconfig, each request bounded by 1 s): the polls that failed
 *   times the interval, and the longest run of failures;
 * - rollback: `upgrade apply` of a package whose new binary fails (k3s: the
 *   server; kubeadm: the kubelet), with a 10 s gate deadline; the rollback
 *   time is from the `rollback` phase's start event to the end of the run
 *   (`--output jsonl` events timestamped as they arrive).
 *
 * With `--ha`, per distribution and round, an HA control plane of three
 * (init with a control-plane endpoint and uploaded certificates, two joined
 * control planes) is upgraded one control plane at a time, the first
 * included, while `/readyz` is polled through another control plane, one
 * that is not moving (as a load balancer in front of them would send it):
 * the API of the control plane as a whole is unavailable when that poll
 * fails. No rollback in this mode.
 *
 * What is measured is edgeadm's orchestration and the simulation's start
 * times, not a real k3s or kubeadm's; the figures compare edgeadm with
 * itself over time and against the goals, no more.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { KubeClient } from '../../src/kube/client.js';
import { kubeCredentialsOf } from '../../src/kube/kubeconfig.js';
import type { BuiltPackage } from '../../src/packages/build.js';
import { REPO_ROOT } from '../../test/support/cli.js';
import { printedJoinArgs } from '../../test/support/cluster-cli.js';
import { buildSimK3sPackage } from '../../test/support/sim-k3s/fixture.js';
import { buildSimKubeadmPackage } from '../../test/support/sim-kubeadm/fixture.js';
import { startTestHosts, type TestHosts } from '../../test/support/test-hosts.js';

const { values } = parseArgs({
  options: {
    distributions: { type: 'string', default: 'k3s,kubeadm' },
    rounds: { type: 'string', default: '1' },
    ha: { type: 'boolean', default: false },
  },
});
const rounds = Number(values.rounds);
const distributions = values.distributions.split(',').map((d) => d.trim()) as Array<'k3s' | 'kubeadm'>;

/** How often the API is polled while an upgrade runs. */
const POLL_INTERVAL_MS = 100;
/** How long one poll may take before it counts as unavailable. */
const POLL_TIMEOUT_MS = 1_000;
/** How long one CLI run may take. */
const RUN_TIMEOUT_MS = 15 * 60_000;

const VERSIONS = {
  k3s: { old: 'v1.31.4+k3s1', next: 'v1.32.1+k3s1', after: 'v1.33.0+k3s1' },
  kubeadm: { old: 'v1.31.4', next: 'v1.32.1', after: 'v1.33.0' },
};

interface Run {
  exitCode: number;
  /** Everything the run printed on stdout. */
  stdout: string;
  wallMs: number;
  /** When each jsonl event arrived (ms after the start), with the event. */
  events: Array<{ atMs: number; event: { type: string; phase?: string } }>;
}

/** Runs the CLI with `--output jsonl`, timestamping each event as it arrives. */
function edgeadm(home: string, args: string[]): Promise<Run> {
  const started = performance.now();
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin/run.js'), ...args], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      HOME: home,
      EDGEADM_HOME: join(home, '.edgeadm'),
      SSH_AUTH_SOCK: '',
      EDGEADM_SERVICE_MANAGER: 'direct',
      NO_COLOR: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: Run['events'] = [];
  let pending = '';
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    pending += chunk.toString('utf8');
    let at: number;
    while ((at = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, at);
      pending = pending.slice(at + 1);
      try {
        events.push({ atMs: performance.now() - started, event: JSON.parse(line) as Run['events'][number]['event'] });
      } catch {
        // Not an event line.
      }
    }
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
  const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0 && !args.includes('upgrade')) process.stderr.write(stderr);
      resolve({ exitCode: code ?? 1, stdout, wallMs: performance.now() - started, events });
    });
  });
}

/** Polls /readyz every {@link POLL_INTERVAL_MS} until stopped; counts the failures. */
function pollApi(client: KubeClient): { stop(): Promise<{ polls: number; failed: number; longestOutageMs: number }> } {
  let isStopping = false;
  let polls = 0;
  let failed = 0;
  let outageStart: number | undefined;
  let longest = 0;
  const loop = (async () => {
    while (!isStopping) {
      const at = performance.now();
      polls += 1;
      let isOk: boolean;
      try {
        isOk = (await client.raw('GET', '/readyz', { timeoutMs: POLL_TIMEOUT_MS })).status === 200;
      } catch {
        isOk = false;
      }
      if (isOk) {
        if (outageStart !== undefined) longest = Math.max(longest, performance.now() - outageStart);
        outageStart = undefined;
      } else {
        failed += 1;
        outageStart ??= at;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, POLL_INTERVAL_MS - (performance.now() - at))));
    }
  })();
  return {
    async stop() {
      isStopping = true;
      await loop;
      if (outageStart !== undefined) longest = Math.max(longest, performance.now() - outageStart);
      return { polls, failed, longestOutageMs: longest };
    },
  };
}

async function buildPackages(
  distribution: 'k3s' | 'kubeadm',
  dir: string,
): Promise<{ old: BuiltPackage; next: BuiltPackage; broken: BuiltPackage }> {
  const v = VERSIONS[distribution];
  if (distribution === 'k3s') {
    return {
      old: await buildSimK3sPackage(dir, { kubernetesVersion: v.old }),
      next: await buildSimK3sPackage(dir, { kubernetesVersion: v.next }),
      broken: await buildSimK3sPackage(dir, { kubernetesVersion: v.after, isServerBroken: true }),
    };
  }
  return {
    old: await buildSimKubeadmPackage(dir, { kubernetesVersion: v.old }),
    next: await buildSimKubeadmPackage(dir, { kubernetesVersion: v.next }),
    broken: await buildSimKubeadmPackage(dir, { kubernetesVersion: v.after, isKubeletBroken: true }),
  };
}

interface RoundResult {
  distribution: string;
  round: number;
  upgradeMs: number;
  apiUnavailableMs: number;
  longestOutageMs: number;
  polls: number;
  rollbackMs: number;
  rollbackOk: boolean;
}

async function round(distribution: 'k3s' | 'kubeadm', index: number): Promise<RoundResult> {
  const env: TestHosts = await startTestHosts({ count: 1 });
  try {
    const host = env.targets[0]!;
    const ssh = ['--host', `root@${host.address}`, '--ssh-key', env.keys.root, '--ssh-known-hosts', env.knownHostsFile];
    const home = mkdtempSync(join(env.dir, 'home-'));
    const packages = await buildPackages(distribution, mkdtempSync(join(env.dir, 'pkg-')));
    const kubeconfig = join(home, 'admin.yaml');
    const init = await edgeadm(home, [
      'init',
      ...ssh,
      '--distribution',
      distribution,
      '--install-pkg-path',
      packages.old.file,
      '--kubeconfig-out',
      kubeconfig,
      '--output',
      'jsonl',
    ]);
    if (init.exitCode !== 0) throw new Error(`init failed (${distribution})`);
    const client = new KubeClient(await kubeCredentialsOf(readFileSync(kubeconfig, 'utf8'), { what: 'admin' }));
    const poller = pollApi(client);
    const upgrade = await edgeadm(home, [
      'upgrade',
      'apply',
      ...ssh,
      '--install-pkg-path',
      packages.next.file,
      '--output',
      'jsonl',
    ]);
    const availability = await poller.stop();
    if (upgrade.exitCode !== 0) throw new Error(`upgrade apply failed (${distribution})`);
    const rollback = await edgeadm(home, [
      'upgrade',
      'apply',
      ...ssh,
      '--install-pkg-path',
      packages.broken.file,
      '--gate-timeout',
      '10s',
      '--output',
      'jsonl',
    ]);
    const start = rollback.events.find((e) => e.event.type === 'phase-started' && e.event.phase === 'rollback');
    const result = rollback.events.find((e) => e.event.type === 'result') as
      { atMs: number; event: { type: string; error?: { code?: string } } } | undefined;
    return {
      distribution,
      round: index,
      upgradeMs: Math.round(upgrade.wallMs),
      apiUnavailableMs: availability.failed * POLL_INTERVAL_MS,
      longestOutageMs: Math.round(availability.longestOutageMs),
      polls: availability.polls,
      rollbackMs: start === undefined ? NaN : Math.round((result?.atMs ?? rollback.wallMs) - start.atMs),
      rollbackOk: result?.event.error?.code === 'E_UPGRADE_ROLLED_BACK',
    };
  } finally {
    await env.teardown();
  }
}

const CERTIFICATE_KEY = 'b'.repeat(64);

interface HaResult {
  distribution: string;
  round: number;
  /** Per control plane moved, in order: its `upgrade apply` wall time and the polls through another that failed. */
  moves: Array<{ controlPlane: number; upgradeMs: number; polls: number; failed: number; longestOutageMs: number }>;
}

async function haRound(distribution: 'k3s' | 'kubeadm', index: number): Promise<HaResult> {
  const env: TestHosts = await startTestHosts({ count: 3 });
  try {
    const ssh = (i: number): string[] => [
      '--host',
      `root@${env.targets[i]!.address}`,
      '--ssh-key',
      env.keys.root,
      '--ssh-known-hosts',
      env.knownHostsFile,
    ];
    const home = mkdtempSync(join(env.dir, 'home-'));
    const packages = await buildPackages(distribution, mkdtempSync(join(env.dir, 'pkg-')));
    const kubeconfig = join(home, 'admin.yaml');
    const init = await edgeadm(home, [
      'init',
      ...ssh(0),
      '--distribution',
      distribution,
      '--install-pkg-path',
      packages.old.file,
      '--control-plane-endpoint',
      env.targets[0]!.address,
      '--upload-certs',
      '--certificate-key',
      CERTIFICATE_KEY,
      '--kubeconfig-out',
      kubeconfig,
      '--json',
    ]);
    // --json prints the join command whole; the jsonl events mask its token.
    const joinCommand =
      init.exitCode === 0
        ? (JSON.parse(init.stdout) as { controlPlaneJoinCommand?: string }).controlPlaneJoinCommand
        : undefined;
    if (init.exitCode !== 0 || joinCommand === undefined) throw new Error(`HA init failed (${distribution})`);
    for (const i of [1, 2]) {
      const joined = await edgeadm(home, [
        ...printedJoinArgs(joinCommand, { isDistributionKept: true }),
        '--install-pkg-path',
        packages.old.file,
        '--control-plane',
        '--certificate-key',
        CERTIFICATE_KEY,
        '--output',
        'jsonl',
        ...ssh(i),
      ]);
      if (joined.exitCode !== 0) throw new Error(`control-plane join of host ${i} failed (${distribution})`);
    }
    const credentials = await kubeCredentialsOf(readFileSync(kubeconfig, 'utf8'), { what: 'admin' });
    const moves: HaResult['moves'] = [];
    for (const moving of [0, 1, 2]) {
      const through = (moving + 1) % 3;
      const poller = pollApi(
        new KubeClient({ ...credentials, server: `https://${env.targets[through]!.address}:6443` }),
      );
      const upgrade = await edgeadm(home, [
        'upgrade',
        'apply',
        ...ssh(moving),
        '--install-pkg-path',
        packages.next.file,
        '--output',
        'jsonl',
      ]);
      const availability = await poller.stop();
      if (upgrade.exitCode !== 0) throw new Error(`upgrade apply of control plane ${moving} failed (${distribution})`);
      moves.push({
        controlPlane: moving,
        upgradeMs: Math.round(upgrade.wallMs),
        polls: availability.polls,
        failed: availability.failed,
        longestOutageMs: Math.round(availability.longestOutageMs),
      });
    }
    return { distribution, round: index, moves };
  } finally {
    await env.teardown();
  }
}

if (values.ha) {
  const haResults: HaResult[] = [];
  for (let r = 1; r <= rounds; r += 1) {
    for (const distribution of distributions) {
      const result = await haRound(distribution, r);
      haResults.push(result);
      process.stderr.write(`${JSON.stringify(result)}\n`);
    }
  }
  const lines = [
    '== upgrade apply, an HA control plane of three, one at a time (simulated distributions) ==',
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    'distribution round  control plane  upgrade(s)  polled through  polls  failed  API unavailable(s)',
    ...haResults.flatMap((r) =>
      r.moves.map(
        (m) =>
          `${r.distribution.padEnd(12)} ${String(r.round).padStart(5)}  ${String(m.controlPlane + 1).padStart(13)}  ${(
            m.upgradeMs / 1000
          )
            .toFixed(1)
            .padStart(
              10,
            )}  ${String(((m.controlPlane + 1) % 3) + 1).padStart(14)}  ${String(m.polls).padStart(5)}  ${String(
            m.failed,
          ).padStart(6)}  ${((m.failed * POLL_INTERVAL_MS) / 1000).toFixed(1).padStart(18)}`,
      ),
    ),
    'Goal (issue #17): API unavailable 0 s for an HA control plane as a whole.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  process.exit(0);
}

const results: RoundResult[] = [];
for (let r = 1; r <= rounds; r += 1) {
  for (const distribution of distributions) {
    const result = await round(distribution, r);
    results.push(result);
    process.stderr.write(`${JSON.stringify(result)}\n`);
  }
}
const lines = [
  '== upgrade apply, one control plane (simulated distributions) ==',
  `load average at the end: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
  'distribution round  upgrade(s)  API unavailable(s)  longest outage(s)  polls  rollback(s)  rolled back',
  ...results.map(
    (r) =>
      `${r.distribution.padEnd(12)} ${String(r.round).padStart(5)}  ${(r.upgradeMs / 1000).toFixed(1).padStart(10)}  ${(
        r.apiUnavailableMs / 1000
      )
        .toFixed(1)
        .padStart(18)}  ${(r.longestOutageMs / 1000).toFixed(1).padStart(17)}  ${String(r.polls).padStart(5)}  ${(
        r.rollbackMs / 1000
      )
        .toFixed(1)
        .padStart(11)}  ${r.rollbackOk ? 'yes' : 'NO'}`,
  ),
  'Goals (issue #17): API unavailable <= 30 s per control plane; rollback <= 60 s.',
];
process.stdout.write(`${lines.join('\n')}\n`);
