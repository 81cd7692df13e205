/**
 * A hub and edge clusters on loopback for the hub integration tests: the
 * hub and the agents run as real `edgeadm` processes (`hub serve`,
 * `register-cloud --foreground`); each edge cluster's API server is the
 * SIMULATED API server from test/support, which records the requests (and
 * Impersonate headers) that reach it.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa, type Options, type ResultPromise } from 'execa';
import { loadHubConfig } from '../../../src/hub/contract/hub-config.js';
import { REPO_ROOT, runCli, type CliResult } from '../../support/cli.js';
import { call } from '../../support/https-client.js';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { TEST_COPY_POLL_NOT_READY_ENV } from '../../../src/rollout/limits.js';

/** The bound of every wait for a background process (a safety net on busy CI, not a timing assertion). */
export const READY_WAIT_MS = 60_000;
const POLL_MS = 200;

/** A background edgeadm process. */
export interface BackgroundCli {
  process: ResultPromise;
  /** Its EDGEADM_HOME (run logs are under logs/). */
  home: string;
  output(): string;
  /** Resolves with the first match of `pattern` in everything printed so far or later. */
  waitForOutput(pattern: RegExp): Promise<RegExpMatchArray>;
  stop(): Promise<void>;
}

/** Starts `edgeadm <args>` in the background. */
export function startCli(args: string[], env: Record<string, string> = {}, input?: string): BackgroundCli {
  const home = mkdtempSync(join(tmpdir(), 'edgeadm-hub-home-'));
  // The single binary when EDGEADM_BIN is set, as runCli does.
  const binary = process.env.EDGEADM_BIN;
  const [file, fileArgs] = binary ? [binary, args] : [process.execPath, [join(REPO_ROOT, 'bin/run.js'), ...args]];
  // Typed as execa's Options: the child is then the ResultPromise the fixture holds.
  const options: Options = {
    reject: false,
    // Agents read not-ready rollout copies back every 200 ms instead of 2 s: waves are not waited out.
    env: { EDGEADM_HOME: home, NO_COLOR: '1', [TEST_COPY_POLL_NOT_READY_ENV]: '200', ...env },
    ...(input === undefined ? { stdin: 'ignore' as const } : { input }),
    cwd: REPO_ROOT,
  };
  const child = execa(file, fileArgs, options);
  let printed = '';
  child.stdout?.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  return {
    process: child,
    home,
    output: () => printed,
    waitForOutput: (pattern) =>
      waitFor(
        () => `output matching ${String(pattern)}; it printed:\n${printed.slice(-4000)}`,
        () => {
          const match = printed.match(pattern);
          if (match) return match;
          if (child.exitCode !== null)
            throw new Error(`the process exited before printing ${String(pattern)}:\n${printed}`);
          return undefined;
        },
      ),
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await child;
    },
  };
}

/** Waits until `check` returns a value, polling. */
export async function waitFor<T>(
  what: string | (() => string),
  check: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = Date.now() + READY_WAIT_MS;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await sleep(POLL_MS);
  }
  const description = typeof what === 'string' ? what : what();
  throw new Error(`timed out waiting for ${description}${lastError ? `: ${String(lastError)}` : ''}`);
}

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A running hub process. */
export interface HubProcess extends BackgroundCli {
  dataDir: string;
  port: number;
  adminConfig: string;
  caPin: string;
}

/** What the helpers below need of a hub: a process or one started in the test's own process. */
export type HubAddress = Pick<HubProcess, 'dataDir' | 'port' | 'adminConfig' | 'caPin'>;

/** Starts `hub serve` and waits until it is ready. */
export async function startHubProcess(options: { dataDir?: string; port?: number } = {}): Promise<HubProcess> {
  // Each start prints its pin again; only this start's output is read.
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'edgeadm-hub-data-'));
  const port = options.port ?? (await freePort());
  const cli = startCli(['hub', 'serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir]);
  const caPin = await waitFor('the hub to print its CA pin', () => {
    if (cli.process.exitCode !== null) throw new Error(`hub serve exited:\n${cli.output()}`);
    return /hub CA pin: (sha256:[0-9a-f]{64})/.exec(cli.output())?.[1];
  });
  return { ...cli, dataDir, port, adminConfig: join(dataDir, 'admin.yaml'), caPin };
}

/** Runs an edgeadm hub client command with the given hub config and returns its parsed JSON. */
export async function hubJson<T>(args: string[], hubConfig: string): Promise<T> {
  const result = await runCli([...args, '--hub-config', hubConfig, '--json']);
  if (result.exitCode !== 0) throw new Error(`edgeadm ${args.join(' ')} failed:\n${result.stdout}${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** An edge cluster: a simulated API server, its kubeconfig file, and (once registered) its agent. */
export interface EdgeCluster {
  name: string;
  api: SimApiServer;
  kubeconfigPath: string;
  dataDir: string;
  agent?: BackgroundCli;
}

/** Starts a simulated API server for one edge cluster. */
export async function startEdgeCluster(
  name: string,
  options: Parameters<typeof startSimApiServer>[0] = {},
): Promise<EdgeCluster> {
  const api = await startSimApiServer({ recordRequests: true, gitVersion: 'v1.30.4+sim', ...options });
  const dir = mkdtempSync(join(tmpdir(), `edgeadm-edge-${name}-`));
  const kubeconfigPath = join(dir, 'admin.kubeconfig');
  writeFileSync(kubeconfigPath, api.kubeconfig(), { mode: 0o600 });
  return { name, api, kubeconfigPath, dataDir: join(dir, 'agent') };
}

/** Creates a hub token with the admin config. */
export async function createHubToken(hub: HubAddress, extra: string[] = []): Promise<string> {
  const created = await hubJson<{ token: string }>(['hub', 'token', 'create', ...extra], hub.adminConfig);
  return created.token;
}

/** Arguments of `register-cloud` for a cluster. */
export function registerArgs(options: {
  hub: HubAddress;
  token: string;
  cluster: EdgeCluster;
  labels: string;
  pin?: string;
}): string[] {
  return [
    'register-cloud',
    `127.0.0.1:${options.hub.port}`,
    '--token',
    options.token,
    '--hub-ca-cert-hash',
    options.pin ?? options.hub.caPin,
    '--name',
    options.cluster.name,
    '--labels',
    options.labels,
    '--kubeconfig',
    options.cluster.kubeconfigPath,
    '--data-dir',
    options.cluster.dataDir,
    '--discovery-timeout',
    '3s',
  ];
}

/** Registers a cluster with `register-cloud --foreground` and waits until the hub shows it Connected. */
export async function registerAndRun(options: {
  hub: HubProcess;
  token: string;
  cluster: EdgeCluster;
  labels: string;
}): Promise<void> {
  options.cluster.agent = startCli([...registerArgs(options), '--foreground']);
  await waitForState(options.hub, options.cluster.name, 'Connected', options.cluster.agent);
}

/**
 * Waits until the hub reports `state` for a cluster. It asks the operator API
 * over HTTPS, as `hub clusters get` does, with the admin config's server, CA
 * and token: a wait, not a test of the CLI, and a CLI process per poll cost a
 * second or more each on a busy machine (the suites that test `hub clusters`
 * run the CLI).
 */
export async function waitForState(hub: HubProcess, name: string, state: string, agent?: BackgroundCli): Promise<void> {
  await waitFor(`cluster ${name} to be ${state}`, async () => {
    if (agent && agent.process.exitCode !== null) throw new Error(`the agent exited:\n${agent.output()}`);
    // Read on each poll, as the CLI read it: a hub just started may not have written it yet.
    const config = loadHubConfig(hub.adminConfig);
    const answer = await call(
      { url: config.server, caPem: config.caPem },
      { path: `/hub/v1/clusters/${name}`, token: config.token },
    );
    if (answer.status !== 200) throw new Error(`the hub answered ${answer.status}: ${answer.text}`);
    return (answer.json as { state?: string }).state === state ? true : undefined;
  });
}

/** Runs `edgeadm kubectl --cluster NAME -- args` with a hub config. */
export function kubectlVia(hubConfig: string, cluster: string, args: string[], input?: string): Promise<CliResult> {
  return runCli(['kubectl', '--hub-config', hubConfig, '--cluster', cluster, '--', ...args], {
    ...(input === undefined ? {} : { input }),
    env: { KUBECACHEDIR: mkdtempSync(join(tmpdir(), 'kubectl-cache-')) },
  });
}

/** Reads a file if it exists. */
export function readIfExists(path: string): string {
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

/** The answer of {@link hubRequest}. */
export interface HubAnswer {
  status: number;
  body: string;
}

/** One raw HTTPS request to the hub, trusting the hub CA. */
export async function hubRequest(options: {
  hub: HubAddress;
  path: string;
  method?: string;
  token?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
}): Promise<HubAnswer> {
  const { request } = await import('node:https');
  const caPem = readFileSync(join(options.hub.dataDir, 'pki', 'ca.crt'), 'utf8');
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: options.hub.port,
        path: options.path,
        method: options.method ?? 'GET',
        ca: caPem,
        agent: false,
        headers: {
          ...(options.token === undefined ? {} : { Authorization: `Bearer ${options.token}` }),
          ...options.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Everything a background process printed, plus its run logs. */
export function outputAndLogs(cli: BackgroundCli): string {
  const dir = join(cli.home, 'logs');
  const logs = existsSync(dir) ? readdirSync(dir).map((file) => readFileSync(join(dir, file), 'utf8')) : [];
  return [cli.output(), ...logs].join('\n');
}
