/**
 * Fleet benchmark: joining N test hosts to one control plane, at the same
 * concurrency, with `edgeadm fleet join` against an Ansible playbook and
 * against parallel-ssh (Debian's pssh: `parallel-scp`, `parallel-ssh`) doing
 * the same steps: copy the install package to every host, unpack it, run the
 * join command. Interleaved round by round in one run, the order rotating,
 * every host reset to fresh between two joins.
 *
 *   npm run bench:fleet                    (as root: it starts netns+sshd test hosts)
 *   npm run bench:fleet -- --hosts 50 --concurrency 10 --rounds 3 --mib 16
 *   npm run bench:fleet -- --tools edgeadm --keep-logs /tmp/logs     (edgeadm alone, its host logs kept)
 *   npm run bench:fleet -- --compare-cli /path/to/other/bin/run.js   (another build in the same rounds)
 *
 * The control plane and the k3s on the hosts are the **simulated** k3s of
 * the test suite (test/support/sim-k3s), not k3s: what is measured is the
 * orchestration (connections, copies, remote commands), which is the same
 * whatever binary the package carries.
 *
 * What each tool does per host:
 * - edgeadm: the whole join workflow over one SSH connection: preflight
 *   (host check), discovery (token JWS and CA pin), package upload (checksum
 *   checked on the host), unpack and install, k3s config and service, wait
 *   until the Node is Ready, labels. Run as the CLI (`bin/run.js`), start-up
 *   included.
 * - Ansible (playbook, `copy` + two `shell` tasks, pipelining on, facts off)
 *   and pssh (`parallel-scp` + two `parallel-ssh` calls): copy, unpack, and a
 *   join command that installs the binary, writes the k3s config and starts
 *   the agent, then waits until the agent has registered its Node (as k3s's
 *   install script waits for its service). No checks: they do less than
 *   edgeadm.
 *
 * Reported per tool: wall time, the CPU time of its own processes (GNU
 * time: the tool and the children it waited for, such as ssh clients or
 * Ansible's forks; not sshd or anything on the hosts) and its largest
 * process's peak RSS.
 */
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { k3sDistribution } from '../../src/cluster/distributions/k3s.js';
import { parseBootstrapToken } from '../../src/trust/bootstrap-token.js';
import { REPO_ROOT } from '../../test/support/cli.js';
import {
  measuredCommand as measured,
  runCommand as run,
  writeAnsibleSetup,
  writeFleetInventory,
  type Measured,
} from '../support/fleet-bench.js';
import { buildSimK3sPackage } from '../../test/support/sim-k3s/fixture.js';
import { startTestHosts, type TestHost, type TestHosts } from '../../test/support/test-hosts.js';

const { values } = parseArgs({
  options: {
    hosts: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    mib: { type: 'string', default: '16' },
    /** Only these tools (comma-separated: edgeadm, ansible, pssh), e.g. to profile one. */
    tools: { type: 'string', default: 'edgeadm,ansible,pssh' },
    /** Copy edgeadm's run directories (one log per host) here before the test hosts go. */
    'keep-logs': { type: 'string' },
    /**
     * Another build's `bin/run.js` (say, of an earlier commit), run as one
     * more tool in the same rounds, for a before/after under the same load.
     */
    'compare-cli': { type: 'string' },
    /** Extra node options for the edgeadm process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`. */
    'node-options': { type: 'string', default: '' },
  },
});
const hostCount = Number(values.hosts);
const concurrency = Number(values.concurrency);
const rounds = Number(values.rounds);
const mib = Number(values.mib);
const selectedTools = new Set([...values.tools.split(',').map((tool) => tool.trim()), 'compare']);
const nodeOptions = values['node-options'].split(' ').filter((option) => option !== '');

/** Where the baselines put the package and unpack it on a host. */
const REMOTE_ARCHIVE = '/var/lib/edgeadm/bench.tar.gz';
const REMOTE_DIR = '/var/lib/edgeadm/bench';
/** Directories a join fills on a host; emptied between two joins (each is a tmpfs of the test host). */
const HOST_STATE_DIRS = ['/var/lib/edgeadm', '/var/lib/rancher', '/etc/rancher', '/usr/local/bin', '/etc/edgeadm'];
/** The agent's registration, as the baselines' join command waits for it (k3s's install script waits for its service). */
const AGENT_KUBECONFIG = '/var/lib/rancher/k3s/agent/kubelet.kubeconfig';

function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Kills every process a join left in a host (its sshd listener stays) and empties the join's directories. */
async function resetHost(env: TestHosts, host: TestHost): Promise<void> {
  const pids = (await run('ip', ['netns', 'pids', host.netns])).stdout
    .split('\n')
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid > 0 && pid !== host.sshdPid);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  await env.run(host, HOST_STATE_DIRS.map((dir) => `find ${dir} -mindepth 1 -delete`).join('; '));
}

const env = await startTestHosts({ count: hostCount + 1 });
const [controlPlane, ...nodes] = env.hosts as [TestHost, ...TestHost[]];
try {
  const dir = mkdtempSync(join(env.dir, 'bench-'));
  const home = join(dir, 'home');
  mkdirSync(home);
  const edgeadmEnv = { HOME: home, EDGEADM_HOME: join(home, '.edgeadm'), SSH_AUTH_SOCK: '', NO_COLOR: '1' };
  const simEnv = { EDGEADM_SERVICE_MANAGER: 'direct' };
  const pkg = (await buildSimK3sPackage(dir, { imageBytes: mib * 2 ** 20 })).file;
  const node = process.execPath;
  const cli = join(REPO_ROOT, 'bin/run.js');
  const kubeconfig = join(dir, 'admin.kubeconfig');

  const init = await run(
    node,
    [
      cli,
      'init',
      '--host',
      `root@${controlPlane.address}`,
      '--ssh-key',
      env.keys.root,
      '--ssh-known-hosts',
      env.knownHostsFile,
      '--install-pkg-path',
      pkg,
      '--kubeconfig-out',
      kubeconfig,
      '--json',
    ],
    { env: { ...edgeadmEnv, ...simEnv } },
  );
  if (init.code !== 0) throw new Error(`edgeadm init failed:\n${init.stderr}`);
  const joinCommand = (JSON.parse(init.stdout) as { joinCommand: string }).joinCommand;
  const token = /--token (\S+)/.exec(joinCommand)![1]!;
  const pin = /--discovery-token-ca-cert-hash (\S+)/.exec(joinCommand)![1]!;
  const endpoint = `${controlPlane.address}:6443`;
  const caPem = await env.run(controlPlane, 'cat /var/lib/rancher/k3s/server/tls/server-ca.crt');
  const k3sToken = k3sDistribution.joinCredential({ caPem, token: parseBootstrapToken(token) });

  // The baselines' steps, the same for Ansible and pssh.
  const unpack = `mkdir -p ${REMOTE_DIR} && tar -xzf ${REMOTE_ARCHIVE} -C ${REMOTE_DIR} --no-same-owner`;
  const joinScript = [
    'set -e',
    `install -m 755 ${REMOTE_DIR}/bin/k3s /usr/local/bin/k3s`,
    'mkdir -p /etc/rancher/k3s',
    `printf 'server: %s\\ntoken: %s\\n' ${quote(`https://${endpoint}`)} ${quote(k3sToken)} > /etc/rancher/k3s/config.yaml`,
    'setsid nohup /usr/local/bin/k3s agent >/var/lib/edgeadm/k3s-agent.log 2>&1 </dev/null &',
    `for i in $(seq 1 1200); do [ -s ${AGENT_KUBECONFIG} ] && exit 0; sleep 0.1; done; exit 1`,
  ].join('\n');

  // edgeadm's inventory; Ansible's inventory and configuration (its playbook below).
  const inventory = join(dir, 'inventory.yaml');
  writeFleetInventory(inventory, { packageFile: pkg, keyFile: env.keys.root, nodes });
  const ansibleSetup = writeAnsibleSetup({
    dir,
    home,
    keyFile: env.keys.root,
    knownHostsFile: env.knownHostsFile,
    concurrency,
    nodes,
  });
  const { sshOptions } = ansibleSetup;
  const ansibleDir = ansibleSetup.dir;
  writeFileSync(
    join(ansibleDir, 'join.yml'),
    [
      '- hosts: all',
      '  gather_facts: false',
      '  tasks:',
      '    - name: Copy the install package',
      `      ansible.builtin.copy: { src: ${pkg}, dest: ${REMOTE_ARCHIVE}, mode: '0600' }`,
      '    - name: Unpack it',
      `      ansible.builtin.shell: ${JSON.stringify(unpack)}`,
      '    - name: Run the join command',
      `      ansible.builtin.shell: ${JSON.stringify(joinScript)}`,
      '',
    ].join('\n'),
  );
  // pssh's host list.
  const psshHosts = join(dir, 'pssh-hosts');
  writeFileSync(psshHosts, nodes.map((host) => `root@${host.address}`).join('\n') + '\n');
  const psshArgs = [
    '-h',
    psshHosts,
    '-p',
    String(concurrency),
    '-t',
    '0',
    '-x',
    `-F /dev/null -i ${env.keys.root} ${sshOptions}`,
  ];

  const edgeadmJoin = (cliPath: string) => (): Promise<Measured> =>
    measured(
      dir,
      node,
      [
        ...nodeOptions,
        cliPath,
        'fleet',
        'join',
        '-i',
        inventory,
        '--endpoint',
        endpoint,
        '--token',
        token,
        '--discovery-token-ca-cert-hash',
        pin,
        '--concurrency',
        String(concurrency),
        '--ssh-known-hosts',
        env.knownHostsFile,
        '--json',
      ],
      { ...edgeadmEnv, ...simEnv },
    );
  const tools: Record<string, () => Promise<Measured>> = {
    'edgeadm fleet join': edgeadmJoin(cli),
    ...(values['compare-cli'] === undefined
      ? {}
      : { [`edgeadm fleet join (${values['compare-cli']})`]: edgeadmJoin(values['compare-cli']) }),
    'Ansible playbook': () =>
      measured(dir, 'ansible-playbook', ['-i', ansibleSetup.hostsFile, join(ansibleDir, 'join.yml')], ansibleSetup.env),
    'pssh (parallel-scp + parallel-ssh)': async () => {
      const steps = [
        await measured(dir, 'parallel-scp', [...psshArgs, pkg, REMOTE_ARCHIVE]),
        await measured(dir, 'parallel-ssh', [...psshArgs, unpack]),
        await measured(dir, 'parallel-ssh', [...psshArgs, joinScript]),
      ];
      return {
        seconds: steps.reduce((sum, step) => sum + step.seconds, 0),
        cpuSeconds: steps.reduce((sum, step) => sum + step.cpuSeconds, 0),
        maxRssKiB: Math.max(...steps.map((step) => step.maxRssKiB)),
      };
    },
  };

  /** Every node registered with the (simulated) API server and Ready, then all of them deleted again. */
  const checkAndForgetNodes = async (tool: string): Promise<void> => {
    const listed = await run('kubectl', ['--kubeconfig', kubeconfig, 'get', 'nodes', '-o', 'json']);
    const items = (
      JSON.parse(listed.stdout) as {
        items: { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } }[];
      }
    ).items;
    const ready = new Set(
      items
        .filter((item) => item.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
        .map((item) => item.metadata.name),
    );
    const missing = nodes.filter((host) => !ready.has(host.name)).map((host) => host.name);
    if (missing.length > 0) throw new Error(`${tool}: not Ready after the run: ${missing.join(', ')}`);
    await run('kubectl', ['--kubeconfig', kubeconfig, 'delete', 'nodes', ...nodes.map((host) => host.name)]);
  };

  const toolKeys: Record<string, string> = {
    'edgeadm fleet join': 'edgeadm',
    'Ansible playbook': 'ansible',
    'pssh (parallel-scp + parallel-ssh)': 'pssh',
  };
  const names = Object.keys(tools).filter((name) => selectedTools.has(toolKeys[name] ?? 'compare'));
  const results: Record<string, Measured[]> = Object.fromEntries(names.map((name) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    // Rotate the order, so that no tool always runs first (or right after another's leftovers).
    for (const name of [...names.slice(round % names.length), ...names.slice(0, round % names.length)]) {
      await Promise.all(nodes.map((host) => resetHost(env, host)));
      const result = await tools[name]!();
      await checkAndForgetNodes(name);
      results[name]!.push(result);
      console.error(
        `round ${round + 1}: ${name}: ${result.seconds.toFixed(2)} s, ${result.cpuSeconds.toFixed(1)} CPU s, ${(result.maxRssKiB / 1024).toFixed(0)} MiB, load ${loadavg()[0]!.toFixed(1)}`,
      );
    }
  }

  if (values['keep-logs'] !== undefined) {
    cpSync(join(home, '.edgeadm'), values['keep-logs'], { recursive: true });
    console.error(`edgeadm's run directories copied to ${values['keep-logs']}`);
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const medianOf = (name: string): number => {
    const xs = results[name];
    return xs === undefined ? Number.NaN : median(xs.map((r) => r.seconds));
  };
  const ansible = medianOf('Ansible playbook');
  const pssh = medianOf('pssh (parallel-scp + parallel-ssh)');
  console.log(
    `${hostCount} hosts, concurrency ${concurrency}, ${mib} MiB package, ${rounds} interleaved rounds, node ${process.version}`,
  );
  console.log(
    '| tool | median s | min s | max s | × Ansible | × pssh | median CPU s | peak RSS MiB |\n|---|---|---|---|---|---|---|---|',
  );
  for (const [name, xs] of Object.entries(results)) {
    const seconds = xs.map((r) => r.seconds);
    const m = median(seconds);
    console.log(
      `| ${name} | ${m.toFixed(2)} | ${Math.min(...seconds).toFixed(2)} | ${Math.max(...seconds).toFixed(2)} | ${(m / ansible).toFixed(2)} | ${(m / pssh).toFixed(2)} | ${median(xs.map((r) => r.cpuSeconds)).toFixed(1)} | ${(Math.max(...xs.map((r) => r.maxRssKiB)) / 1024).toFixed(0)} |`,
    );
  }
} finally {
  await env.teardown();
}
