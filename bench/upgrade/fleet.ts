/**
 * Fleet upgrade benchmark: N nodes of one cluster from one minor version to
 * the next, with `edgeadm fleet upgrade` against an Ansible playbook doing
 * the same steps (copy the package, unpack it, swap the binary, restart the
 * agent, wait until the Node reports the new version), at the same
 * concurrency, interleaved round by round in one run (the order rotating),
 * every node put back on the old version between two upgrades.
 *
 *   npm run bench:upgrade-fleet                  (as root: it starts netns+sshd test hosts)
 *   npm run bench:upgrade-fleet -- --hosts 20 --concurrency 10 --rounds 3
 *   npm run bench:upgrade-fleet -- --hosts 2 --rounds 1            (a smoke run)
 *
 * The cluster is the **simulated** k3s of the test suite
 * (test/support/sim-k3s), not k3s: what is measured is the orchestration
 * (connections, copies, remote commands, waits), which is the same whatever
 * binary the package carries. The control plane is upgraded once before the
 * rounds (`upgrade apply`): `fleet upgrade` then finds it done (it reads it),
 * and both tools upgrade the nodes.
 *
 * What each tool does per node:
 * - edgeadm (`fleet upgrade`, the CLI, start-up included): the skew check,
 *   cordon, drain (no Pods here), package upload (checksum checked), unpack
 *   and check against the manifest, backup, atomic swap, restart, wait for
 *   the Node Ready at the new version, uncordon.
 * - Ansible (`copy` + `shell` tasks, pipelining on, facts off, forks =
 *   concurrency): copy, unpack, install the binary, restart the agent, then
 *   wait (from this machine, with kubectl) until the Node reports the new
 *   version. No cordon, drain, backup or checks: it does less than edgeadm.
 *
 * Reported per tool: wall time, the CPU time of its own processes (GNU time)
 * and its largest process's peak RSS.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { hostPackagePaths } from '../../src/cluster/package-phase.js';
import { REPO_ROOT } from '../../test/support/cli.js';
import {
  measuredCommand as measured,
  runCommand,
  writeAnsibleSetup,
  writeFleetInventory,
  type Measured,
} from '../support/fleet-bench.js';
import { buildSimK3sPackage } from '../../test/support/sim-k3s/fixture.js';
import { startTestHosts, type TestHost } from '../../test/support/test-hosts.js';

const { values } = parseArgs({
  options: {
    hosts: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    /** Only these tools (comma-separated: edgeadm, ansible). */
    tools: { type: 'string', default: 'edgeadm,ansible' },
  },
});
const hostCount = Number(values.hosts);
const concurrency = Number(values.concurrency);
const rounds = Number(values.rounds);
const selectedTools = new Set(values.tools.split(',').map((tool) => tool.trim()));

const VERSIONS = { old: 'v1.31.4+k3s1', next: 'v1.32.1+k3s1' };
/** Where the playbook puts the package and unpacks it on a node. */
const REMOTE_ARCHIVE = '/var/lib/edgeadm/bench-upgrade.tar.gz';
const REMOTE_DIR = '/var/lib/edgeadm/bench-upgrade';
/** How the agent runs on the test hosts (edgeadm's direct service manager: no systemd there). */
const AGENT_UNIT = '/etc/systemd/system/k3s-agent.service';
const AGENT_PID_FILE = '/var/lib/edgeadm/services/k3s-agent.service.pid';
const AGENT_LOG_FILE = '/var/lib/edgeadm/services/k3s-agent.service.log';
/** How long the playbook waits for one Node to report the new version (tries × delay). */
const WAIT_TRIES = 600;
const WAIT_DELAY_S = 0.2;

/** The agent restarted on whatever /usr/local/bin/k3s is now (as the direct service manager starts it). */
const RESTART_AGENT = [
  `if [ -f ${AGENT_PID_FILE} ]; then pid=$(cat ${AGENT_PID_FILE}); kill "$pid" 2>/dev/null || true; while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done; fi`,
  `cmd=$(sed -n 's/^ExecStart=//p' ${AGENT_UNIT})`,
  `setsid nohup $cmd </dev/null >>${AGENT_LOG_FILE} 2>&1 &`,
  `echo $! > ${AGENT_PID_FILE}`,
].join('\n');

const env = await startTestHosts({ count: hostCount + 1 });
const [controlPlane, ...nodes] = env.hosts as [TestHost, ...TestHost[]];
try {
  const dir = mkdtempSync(join(env.dir, 'bench-upgrade-'));
  const home = join(dir, 'home');
  mkdirSync(home);
  const edgeadmEnv = {
    HOME: home,
    EDGEADM_HOME: join(home, '.edgeadm'),
    SSH_AUTH_SOCK: '',
    NO_COLOR: '1',
    EDGEADM_SERVICE_MANAGER: 'direct',
  };
  const old = await buildSimK3sPackage(dir, { kubernetesVersion: VERSIONS.old });
  const next = await buildSimK3sPackage(dir, { kubernetesVersion: VERSIONS.next });
  const node = process.execPath;
  const cli = join(REPO_ROOT, 'bin/run.js');
  const kubeconfig = join(dir, 'admin.kubeconfig');
  const edgeadm = async (args: string[]): Promise<void> => {
    const result = await runCommand(node, [cli, ...args], { env: edgeadmEnv });
    if (result.code !== 0)
      throw new Error(`edgeadm ${args.slice(0, 2).join(' ')} failed:\n${result.stderr.slice(-4000)}`);
  };

  const inventory = join(dir, 'inventory.yaml');
  writeFleetInventory(inventory, { packageFile: old.file, keyFile: env.keys.root, controlPlane, nodes });
  const sshArgs = ['--ssh-known-hosts', env.knownHostsFile];
  await edgeadm([
    'fleet',
    'up',
    '-i',
    inventory,
    ...sshArgs,
    '--kubeconfig-out',
    kubeconfig,
    '--concurrency',
    String(concurrency),
    '--json',
  ]);
  await edgeadm([
    'upgrade',
    'apply',
    '--host',
    `root@${controlPlane.address}`,
    '--ssh-key',
    env.keys.root,
    ...sshArgs,
    '--install-pkg-path',
    next.file,
    '--json',
  ]);

  const versions = async (): Promise<Map<string, string>> => {
    const listed = await runCommand('kubectl', ['--kubeconfig', kubeconfig, 'get', 'nodes', '-o', 'json']);
    const items = (
      JSON.parse(listed.stdout) as {
        items: { metadata: { name: string }; status?: { nodeInfo?: { kubeletVersion?: string } } }[];
      }
    ).items;
    return new Map(items.map((item) => [item.metadata.name, item.status?.nodeInfo?.kubeletVersion ?? '']));
  };
  const until = async (version: string): Promise<void> => {
    for (let i = 0; ; i++) {
      const seen = await versions();
      if (nodes.every((host) => seen.get(host.name) === version)) return;
      if (i > 600) throw new Error(`the nodes did not all reach ${version}: ${JSON.stringify([...seen])}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  /** Every node back on the old binary, with no upgrade state, uncordoned. */
  const resetNodes = async (): Promise<void> => {
    const oldBinary = `${hostPackagePaths(old.manifest.name).dir}/bin/k3s`;
    await Promise.all(
      nodes.map((host) =>
        env.run(
          host,
          [
            `install -m 755 ${oldBinary} /usr/local/bin/k3s`,
            'rm -rf /var/lib/edgeadm/upgrade',
            `rm -rf ${REMOTE_DIR} ${REMOTE_ARCHIVE}`,
            RESTART_AGENT,
          ].join('\n'),
        ),
      ),
    );
    await until(VERSIONS.old);
    await runCommand('kubectl', ['--kubeconfig', kubeconfig, 'uncordon', ...nodes.map((host) => host.name)]);
  };

  // Ansible's inventory and configuration; its playbook.
  const ansibleSetup = writeAnsibleSetup({
    dir,
    home,
    keyFile: env.keys.root,
    knownHostsFile: env.knownHostsFile,
    concurrency,
    nodes,
    hostVars: (host) => `node_name: ${host.name}`,
  });
  const ansibleDir = ansibleSetup.dir;
  const swap = `install -m 755 ${REMOTE_DIR}/bin/k3s /usr/local/bin/k3s.new && mv -f /usr/local/bin/k3s.new /usr/local/bin/k3s`;
  writeFileSync(
    join(ansibleDir, 'upgrade.yml'),
    [
      '- hosts: all',
      '  gather_facts: false',
      '  tasks:',
      '    - name: Copy the install package',
      `      ansible.builtin.copy: { src: ${next.file}, dest: ${REMOTE_ARCHIVE}, mode: '0600' }`,
      '    - name: Unpack it',
      `      ansible.builtin.shell: ${JSON.stringify(`mkdir -p ${REMOTE_DIR} && tar -xzf ${REMOTE_ARCHIVE} -C ${REMOTE_DIR} --no-same-owner`)}`,
      '    - name: Swap the binary',
      `      ansible.builtin.shell: ${JSON.stringify(swap)}`,
      '    - name: Restart the agent',
      `      ansible.builtin.shell: ${JSON.stringify(RESTART_AGENT)}`,
      '    - name: Wait until the Node reports the new version',
      `      ansible.builtin.command: kubectl --kubeconfig ${kubeconfig} get node {{ node_name }} -o jsonpath={.status.nodeInfo.kubeletVersion}`,
      '      delegate_to: localhost',
      '      register: version',
      `      until: version.stdout == ${JSON.stringify(VERSIONS.next)}`,
      `      retries: ${WAIT_TRIES}`,
      `      delay: ${WAIT_DELAY_S}`,
      '      changed_when: false',
      '',
    ].join('\n'),
  );

  const tools: Record<string, () => Promise<Measured>> = {
    'edgeadm fleet upgrade': () =>
      measured(
        dir,
        node,
        [
          cli,
          'fleet',
          'upgrade',
          '-i',
          inventory,
          ...sshArgs,
          '--install-pkg-path',
          next.file,
          '--concurrency',
          String(concurrency),
          '--json',
        ],
        edgeadmEnv,
      ),
    'Ansible playbook': () =>
      measured(dir, 'ansible-playbook', ['-i', ansibleSetup.hostsFile, join(ansibleDir, 'upgrade.yml')], {
        ...ansibleSetup.env,
        ANSIBLE_PYTHON_INTERPRETER: '/usr/bin/python3',
      }),
  };
  const toolKeys: Record<string, string> = { 'edgeadm fleet upgrade': 'edgeadm', 'Ansible playbook': 'ansible' };
  const names = Object.keys(tools).filter((name) => selectedTools.has(toolKeys[name]!));
  const results: Record<string, Measured[]> = Object.fromEntries(names.map((name) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const name of [...names.slice(round % names.length), ...names.slice(0, round % names.length)]) {
      await resetNodes();
      const result = await tools[name]!();
      await until(VERSIONS.next);
      results[name]!.push(result);
      console.error(
        `round ${round + 1}: ${name}: ${result.seconds.toFixed(2)} s, ${result.cpuSeconds.toFixed(1)} CPU s, ${(result.maxRssKiB / 1024).toFixed(0)} MiB, load ${loadavg()[0]!.toFixed(1)}`,
      );
    }
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const ansible =
    results['Ansible playbook'] === undefined ? Number.NaN : median(results['Ansible playbook'].map((r) => r.seconds));
  console.log(`${hostCount} nodes, concurrency ${concurrency}, ${rounds} interleaved rounds, node ${process.version}`);
  console.log(
    '| tool | median s | min s | max s | × Ansible | median CPU s | peak RSS MiB |\n|---|---|---|---|---|---|---|',
  );
  for (const [name, xs] of Object.entries(results)) {
    const seconds = xs.map((r) => r.seconds);
    const m = median(seconds);
    console.log(
      `| ${name} | ${m.toFixed(2)} | ${Math.min(...seconds).toFixed(2)} | ${Math.max(...seconds).toFixed(2)} | ${(m / ansible).toFixed(2)} | ${median(xs.map((r) => r.cpuSeconds)).toFixed(1)} | ${(Math.max(...xs.map((r) => r.maxRssKiB)) / 1024).toFixed(0)} |`,
    );
  }
} finally {
  await env.teardown();
}
