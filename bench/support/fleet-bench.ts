/**
 * What the fleet benchmarks (bench/fleet/run.ts: `fleet join`,
 * bench/upgrade/fleet.ts: `fleet upgrade`) share: running a command and
 * measuring it with GNU time, edgeadm's inventory of the test hosts, and the
 * Ansible baseline's inventory and configuration (same SSH trust as
 * edgeadm: the test hosts' known_hosts, no agent, forks = concurrency).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/support/cli.js';
import type { TestHost } from '../../test/support/test-hosts.js';

/** How long one tool may take for all hosts. */
export const RUN_TIMEOUT_MS = 30 * 60_000;

/** What one measured run cost. */
export interface Measured {
  seconds: number;
  /** User plus system CPU seconds of the tool's own processes (GNU time: the tool and what it waited for; not sshd or the hosts). */
  cpuSeconds: number;
  /** Largest resident set of the tool's processes, KiB (GNU time's %M: the largest process waited for). */
  maxRssKiB: number;
}

/** Runs a command to its end (killed after {@link RUN_TIMEOUT_MS}), with its output. */
export function runCommand(
  file: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      env: { ...process.env, ...options.env },
      cwd: options.cwd ?? REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

/** Runs a command under GNU time (its report in `dir`); fails loudly on a non-zero exit. */
export async function measuredCommand(
  dir: string,
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<Measured> {
  const timeFile = join(dir, 'time.txt');
  const start = performance.now();
  const result = await runCommand('/usr/bin/time', ['-f', '%U %S %M', '-o', timeFile, file, ...args], { env });
  const seconds = (performance.now() - start) / 1000;
  if (result.code !== 0) {
    throw new Error(
      `${file} ${args.join(' ')} exited ${result.code}:\n${result.stdout.slice(-4000)}\n${result.stderr.slice(-4000)}`,
    );
  }
  const [user, system, rss] = readFileSync(timeFile, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
  return { seconds, cpuSeconds: user! + system!, maxRssKiB: rss! };
}

/** The name the benchmarks give the `index`th node host, in both tools' inventories. */
function nodeName(index: number): string {
  return `store-${index + 1}`;
}

/** Writes edgeadm's inventory: the nodes as group `stores`, the control plane when given. */
export function writeFleetInventory(
  path: string,
  options: { packageFile: string; keyFile: string; controlPlane?: TestHost; nodes: readonly TestHost[] },
): void {
  const controlPlane =
    options.controlPlane === undefined
      ? []
      : ['controlPlane:', '  hosts:', `    cp: { address: ${options.controlPlane.address} }`];
  writeFileSync(
    path,
    [
      'kind: FleetInventory',
      `package: ${options.packageFile}`,
      `ssh: { user: root, keyFile: ${options.keyFile} }`,
      ...controlPlane,
      'nodeGroups:',
      '  stores:',
      '    hosts:',
      ...options.nodes.map((host, index) => `      ${nodeName(index)}: { address: ${host.address} }`),
      '',
    ].join('\n'),
  );
}

/** The Ansible baseline's files, written by {@link writeAnsibleSetup}. */
export interface AnsibleSetup {
  dir: string;
  hostsFile: string;
  configFile: string;
  /** The ssh options both Ansible and pssh use: the test hosts' known_hosts, checked, no prompt. */
  sshOptions: string;
  /** The environment `ansible-playbook` runs with. */
  env: NodeJS.ProcessEnv;
}

/** Writes Ansible's inventory and configuration for the nodes under `dir/ansible`. */
export function writeAnsibleSetup(options: {
  dir: string;
  home: string;
  keyFile: string;
  knownHostsFile: string;
  concurrency: number;
  nodes: readonly TestHost[];
  /** Host variables beyond the address (`node_name: …`). */
  hostVars?: (host: TestHost) => string;
}): AnsibleSetup {
  const sshOptions = `-o UserKnownHostsFile=${options.knownHostsFile} -o StrictHostKeyChecking=yes -o BatchMode=yes`;
  const dir = join(options.dir, 'ansible');
  mkdirSync(join(dir, 'cp'), { recursive: true });
  const hostsFile = join(dir, 'hosts.yml');
  writeFileSync(
    hostsFile,
    [
      'all:',
      '  vars:',
      '    ansible_user: root',
      `    ansible_ssh_private_key_file: ${options.keyFile}`,
      '    ansible_python_interpreter: /usr/bin/python3',
      '  hosts:',
      ...options.nodes.map((host, index) => {
        const extra = options.hostVars === undefined ? '' : `, ${options.hostVars(host)}`;
        return `    ${nodeName(index)}: { ansible_host: ${host.address}${extra} }`;
      }),
      '',
    ].join('\n'),
  );
  const configFile = join(dir, 'ansible.cfg');
  writeFileSync(
    configFile,
    [
      '[defaults]',
      `forks = ${options.concurrency}`,
      'host_key_checking = True',
      'gathering = explicit',
      'retry_files_enabled = False',
      '[ssh_connection]',
      'pipelining = True',
      `ssh_args = -F /dev/null -o ControlMaster=auto -o ControlPersist=60s ${sshOptions}`,
      `control_path_dir = ${join(dir, 'cp')}`,
      '',
    ].join('\n'),
  );
  return {
    dir,
    hostsFile,
    configFile,
    sshOptions,
    env: { ANSIBLE_CONFIG: configFile, HOME: options.home, ANSIBLE_LOCAL_TEMP: join(dir, 'tmp') },
  };
}
