/**
 * What the fleet integration suites with several control planes share:
 * running `edgeadm fleet …` as an operator would (a private home, the
 * direct service manager, `--json`), counting the SSH connections each test
 * host accepted, reading a run's files, making a host unfit by taking its
 * kubelet port, and asking each control plane's API server for the cluster's
 * control-plane Nodes.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeClient } from '../../src/kube/client.js';
import { kubeCredentialsOf } from '../../src/kube/kubeconfig.js';
import { runCli, type CliResult } from './cli.js';
import type { TestHost, TestHosts } from './test-hosts.js';

/** Options of {@link fleetCliFor}. */
export interface FleetCliOptions {
  /** The operator's home (`$HOME`; `$EDGEADM_HOME` is `.edgeadm` in it). */
  home: string;
  /** Bound for one CLI run. */
  timeoutMs: number;
  /** `--ssh-timeout`, in seconds. */
  sshTimeoutSeconds: string;
  /** `--kubeconfig-out` of every `fleet up`. */
  adminKubeconfig: string;
}

/** `edgeadm fleet <command> -i <inventory> … --json`, with the run and its JSON document. */
export type FleetCli = <T>(
  command: string,
  inventory: string,
  extra?: string[],
) => Promise<{ run: CliResult; result: T }>;

/** The fleet CLI bound to one harness and one operator home. */
export function fleetCliFor(env: TestHosts, options: FleetCliOptions): FleetCli {
  return async <T>(command: string, inventory: string, extra: string[] = []) => {
    const run = await runCli(
      [
        'fleet',
        command,
        '-i',
        inventory,
        '--ssh-known-hosts',
        env.knownHostsFile,
        '--ssh-timeout',
        options.sshTimeoutSeconds,
        '--json',
        ...(command === 'up' ? ['--kubeconfig-out', options.adminKubeconfig] : []),
        ...extra,
      ],
      {
        env: {
          HOME: options.home,
          EDGEADM_HOME: join(options.home, '.edgeadm'),
          SSH_AUTH_SOCK: '',
          EDGEADM_SERVICE_MANAGER: 'direct',
        },
        timeoutMs: options.timeoutMs,
      },
    );
    try {
      return { run, result: JSON.parse(run.stdout) as T };
    } catch {
      throw new Error(`fleet ${command} printed no JSON (exit ${run.exitCode}):\n${run.stdout}\n${run.stderr}`);
    }
  };
}

/** SSH connections each target host has accepted so far (sshd logs one line per connection). */
export function connectionCounts(env: TestHosts): Map<string, number> {
  return new Map(
    env.targets.map((host) => [host.name, env.sshdLog(host).match(/Accepted publickey for root from /g)?.length ?? 0]),
  );
}

/** SSH connections each target host has accepted since `earlier` ({@link connectionCounts}). */
export function connectionsSince(env: TestHosts, earlier: Map<string, number>): Map<string, number> {
  return new Map([...connectionCounts(env)].map(([name, count]) => [name, count - earlier.get(name)!]));
}

/** Every file of a run directory, concatenated (state.json and the host logs). */
export function runFiles(runDir: string): string {
  const hostsDir = join(runDir, 'hosts');
  const logs = existsSync(hostsDir)
    ? readdirSync(hostsDir).map((file) => readFileSync(join(hostsDir, file), 'utf8'))
    : [];
  return [readFileSync(join(runDir, 'state.json'), 'utf8'), ...logs].join('\n');
}

/** What a port listener marks on its host when it listens. */
const LISTENER_READY = '/var/lib/edgeadm/fleet-port-10250-ready';

/**
 * Makes `host` unfit for a join: a process holds its kubelet port (10250),
 * so join's preflight fails there. Resolves once it listens, to a function
 * that frees the port.
 */
export async function takeKubeletPort(env: TestHosts, host: TestHost): Promise<() => Promise<void>> {
  const pid = (
    await env.run(
      host,
      `rm -f ${LISTENER_READY}; nohup ${process.execPath} -e "require('node:net').createServer().listen(10250, () => require('node:fs').writeFileSync('${LISTENER_READY}', '')); setInterval(() => {}, 60000)" >/dev/null 2>&1 & echo $!`,
    )
  ).trim();
  await env.run(host, `for i in $(seq 1 600); do [ -e ${LISTENER_READY} ] && exit 0; sleep 0.1; done; exit 1`);
  return async () => {
    await env.run(host, `kill ${pid}; rm -f ${LISTENER_READY}`);
  };
}

/**
 * The names of the control-plane Nodes as each control plane's API server
 * lists them (`https://<address>:6443`, verified with the cluster CA of the
 * admin kubeconfig), by host name.
 */
export async function controlPlaneNodesByServer(
  adminKubeconfig: string,
  controlPlanes: TestHost[],
  labelSelector: string,
): Promise<Map<string, string[]>> {
  const admin = await kubeCredentialsOf(readFileSync(adminKubeconfig, 'utf8'), { what: 'admin' });
  const seen = new Map<string, string[]>();
  for (const host of controlPlanes) {
    const client = new KubeClient({ ...admin, server: `https://${host.address}:6443` });
    const nodes = await client.list<{ metadata: { name: string } }>('/api/v1/nodes', { labelSelector });
    seen.set(host.name, nodes.map((node) => node.metadata.name).sort());
  }
  return seen;
}
