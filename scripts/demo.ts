/**
 * `npm run demo`: the main job, init → join ×2 → kubectl get nodes → reset
 * ×3, run by the real edgeadm CLI over real SSH on this machine, so that a
 * new user sees what edgeadm does without hosts or a k3s package of their
 * own.
 *
 * The three hosts are the test suite's network-namespace hosts (each a real
 * sshd with its own address and its own tmpfs /etc, /usr/local/bin and
 * /var/lib), and the k3s in the install package is the test suite's
 * SIMULATED k3s (test/support/sim-k3s: a stand-in that writes what k3s
 * writes and serves a small in-memory API server): the Kubernetes binaries
 * cannot be had here. Everything else (package verification and upload,
 * discovery with the token and CA pin, the service, the kubeconfig, reset)
 * is edgeadm's real code. The hosts have no systemd, so the demo asks for
 * edgeadm's direct service manager, as the tests do.
 *
 *   npm run build && npm run demo                     # as root
 *   npm run demo -- --binary dist/edgeadm-linux-x64   # the single binary instead of bin/run.js
 *   npm run demo -- --binary dist/edgeadm-linux-x64 --real
 *                     # the same job on real Kubernetes (kubeadm) built from its module: test/real/README.md
 *   npm run demo -- --keep                            # stop before the resets, until Enter
 *
 * Needs root and the Debian packages openssh-server, openssh-client,
 * iproute2 and sudo (the harness names any that is missing).
 */
import { mkdtempSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { execa } from 'execa';
import { REPO_ROOT } from '../test/support/cli.js';
import { ensurePinnedKubectl, PINNED_KUBECTL_VERSION } from '../test/support/pinned-kubectl.js';
import { buildSimK3sPackage } from '../test/support/sim-k3s/fixture.js';
import { lineFromInsidePod, runRealMainJob } from '../test/support/real/main-job.js';
import { rigUnavailableReason } from '../test/support/real/rig.js';
import { TMPFS_DIRS, startTestHosts, type TestHost, type TestHosts } from '../test/support/test-hosts.js';

const { values: flags } = parseArgs({
  options: {
    binary: { type: 'string' },
    keep: { type: 'boolean' },
    real: { type: 'boolean' },
    distribution: { type: 'string' },
  },
});

/** The edgeadm the demo runs: the single binary if given, else this tree's bin/run.js on Node 24. */
const edgeadm: [string, string[]] = flags.binary
  ? [resolve(flags.binary), []]
  : [process.execPath, [join(REPO_ROOT, 'bin', 'run.js')]];

/** A step's heading, then the command line as an operator would type it. */
function show(title: string, args: string[], program = 'edgeadm'): void {
  process.stdout.write(`\n=== ${title}\n$ ${program} ${args.join(' ')}\n`);
}

/** Runs edgeadm with the demo's environment, its output on this terminal; throws on failure. */
async function run(env: Record<string, string>, title: string, args: string[]): Promise<void> {
  show(title, args);
  await execa(edgeadm[0], [...edgeadm[1], ...args], { env, stdio: 'inherit', cwd: REPO_ROOT });
}

/**
 * Runs edgeadm with its output on this terminal and also returns it, so the
 * demo can take the join command that init prints, as an operator copies it.
 */
async function runAndRead(env: Record<string, string>, title: string, args: string[]): Promise<string> {
  show(title, args);
  const result = await execa(edgeadm[0], [...edgeadm[1], ...args], {
    env,
    cwd: REPO_ROOT,
    stdout: ['pipe', 'inherit'],
    stderr: 'inherit',
  });
  return String(result.stdout);
}

async function main(): Promise<void> {
  if (flags.real) return realDemo();
  process.stdout.write('Starting three local SSH hosts (network namespaces) ...\n');
  const hosts: TestHosts = await startTestHosts({ count: 3 });
  try {
    await demo(hosts);
  } finally {
    await hosts.teardown();
  }
}

/**
 * `--real`: the main job on real upstream Kubernetes built from its own Go
 * module (test/real), with Debian's containerd and runc running real pods.
 * kubeadm only: k3s is not served by the Go module proxy these machines
 * reach (test/real/README.md).
 */
async function realDemo(): Promise<void> {
  const distribution = flags.distribution ?? 'kubeadm';
  if (distribution !== 'kubeadm') {
    throw new Error(
      `--real runs kubeadm only: k3s cannot be built here (the Go module proxy refuses github.com/k3s-io/k3s; see test/real/README.md). Run: npm run demo -- --real --distribution kubeadm`,
    );
  }
  const unavailable = rigUnavailableReason();
  if (unavailable) throw new Error(`the real rig cannot run: ${unavailable}`);
  process.stdout.write('Starting three local SSH hosts (network namespaces, each with its own cgroups) ...\n');
  const hosts = await startTestHosts({ count: 3, cgroups: true });
  try {
    const result = await runRealMainJob({
      hosts,
      edgeadm,
      reporter: {
        step: (title, commandLine) => process.stdout.write(`\n=== ${title}\n$ ${commandLine}\n`),
        output: (text) => process.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`),
      },
    });
    const problems: string[] = [];
    const notReady = result.nodes.filter((n) => !n.isReady || n.kubeletVersion !== result.kubernetesVersion);
    if (result.nodes.length !== 3 || notReady.length > 0)
      problems.push(`nodes not Ready at ${result.kubernetesVersion}: ${JSON.stringify(result.nodes)}`);
    const insideLine = lineFromInsidePod(result.pods[0]?.name ?? 'none');
    if (!result.execOutput.includes(insideLine))
      problems.push(
        `kubectl exec did not run inside the pod: expected "${insideLine}", got "${result.execOutput.trim()}"`,
      );
    for (const [host, lines] of Object.entries(result.leftovers)) {
      if (lines.length > 0) problems.push(`${host} is not as before init:\n  ${lines.join('\n  ')}`);
    }
    if (problems.length > 0) throw new Error(problems.join('\n'));
    process.stdout.write(
      `\nDone on real Kubernetes ${result.kubernetesVersion}: three nodes Ready, pods ran on the edge nodes, and every host (files, mounts, processes, links, cgroups) is as before init.\n` +
        `Times: init ${result.seconds.init.toFixed(0)} s, join to node Ready ${result.seconds.joins.map((s) => `${s.toFixed(0)} s`).join(' and ')}, the whole job ${result.seconds.total.toFixed(0)} s.\n`,
    );
  } finally {
    await hosts.teardown();
  }
}

async function demo(hosts: TestHosts): Promise<void> {
  const [controlPlane, edge1, edge2] = hosts.targets as [TestHost, TestHost, TestHost];
  const home = mkdtempSync(join(hosts.dir, 'operator-home-'));
  const env = {
    HOME: home,
    EDGEADM_HOME: join(home, '.edgeadm'),
    EDGEADM_SERVICE_MANAGER: 'direct',
    SSH_AUTH_SOCK: '',
  };
  const ssh = (host: TestHost): string[] => [
    '--host',
    `root@${host.address}`,
    '--ssh-key',
    hosts.keys.root,
    '--ssh-known-hosts',
    hosts.knownHostsFile,
  ];
  // Every path under the hosts' install directories, to show that reset puts each host back.
  const listing = (host: TestHost): Promise<string> =>
    hosts.run(host, `find ${TMPFS_DIRS.join(' ')} -printf '%p %y %m\\n' 2>/dev/null | sort`);
  const before = new Map<string, string>();
  for (const host of hosts.targets) before.set(host.name, await listing(host));
  const pkg = (await buildSimK3sPackage(mkdtempSync(join(hosts.dir, 'pkg-')))).file;
  const kubeconfig = join(home, 'admin.yaml');
  process.stdout.write(
    [
      `hosts: ${controlPlane.name} ${controlPlane.address} (control plane), ${edge1.name} ${edge1.address}, ${edge2.name} ${edge2.address}`,
      `install package: ${pkg}`,
      "  (its bin/k3s is the SIMULATED k3s of edgeadm's tests, not k3s)",
      '',
    ].join('\n'),
  );

  await run(env, 'check the control-plane host', ['host', 'check', ...ssh(controlPlane)]);
  const initOutput = await runAndRead(env, 'init the control plane', [
    'init',
    ...ssh(controlPlane),
    '--install-pkg-path',
    pkg,
    '--kubeconfig-out',
    kubeconfig,
  ]);
  const joinCommand = /^\s*(edgeadm join \S.*)$/m.exec(initOutput)?.[1];
  if (joinCommand === undefined) throw new Error('init printed no join command');
  const joinArgs = joinCommand.trim().split(/\s+/).slice(1);
  for (const node of [edge1, edge2]) {
    await run(env, `join ${node.name}`, [...joinArgs, ...ssh(node)]);
  }

  // Not -o wide: the simulated API server's tables have the default columns only, and the demo shows what it prints.
  const kubectlArgs = ['--kubeconfig', kubeconfig, 'get', 'nodes'];
  show(`the cluster, through the real kubectl (${PINNED_KUBECTL_VERSION})`, kubectlArgs, 'kubectl');
  await execa(ensurePinnedKubectl(), kubectlArgs, { stdio: 'inherit' });
  await run(env, 'list the bootstrap tokens', ['token', 'list', '--kubeconfig', kubeconfig]);

  if (flags.keep) await keepUntilEnter(env, ssh(controlPlane), kubeconfig);

  for (const host of [edge2, edge1, controlPlane]) {
    await run(env, `reset ${host.name}`, ['reset', ...ssh(host), '--force']);
  }
  for (const host of hosts.targets) {
    if ((await listing(host)) !== before.get(host.name)) {
      throw new Error(`${host.name}: its install directories differ from before init`);
    }
  }
  process.stdout.write(`\nDone: every host's install directories (${TMPFS_DIRS.join(', ')}) are as before init.\n`);
}

/**
 * `--keep`: the cluster stays up for the operator to try commands on, until
 * Enter; the hosts live only as long as this process, so it waits here.
 */
async function keepUntilEnter(env: Record<string, string>, sshArgs: string[], kubeconfig: string): Promise<void> {
  const exports = Object.entries(env)
    .map(([name, value]) => `${name}=${value}`)
    .join(' ');
  process.stdout.write(
    [
      '',
      '=== the cluster stays up (--keep); in another terminal, as root:',
      `  ${exports} ${edgeadm[0]} ${[...edgeadm[1], 'host', 'check', ...sshArgs].join(' ')}`,
      `  ${ensurePinnedKubectl()} --kubeconfig ${kubeconfig} get pods -A`,
      'Press Enter to reset the hosts and end the demo.',
      '',
    ].join('\n'),
  );
  process.stdin.resume();
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  process.stdin.pause();
}

await main();
