/**
 * `register-cloud` parses its one request before any I/O. Each case runs
 * the built CLI with one malformed input against a TCP listener that stands
 * in for everything register-cloud could reach: the hub (discovery), the
 * SSH host (`--host`) and the edge cluster's API server (the
 * `--kubeconfig` that `--create-service-account` would create the agent's
 * ServiceAccount, ClusterRole, binding and Secret with). The listener counts
 * every connection: the answer must be the input's own error code, with no
 * connection made, so nothing was created on the cluster.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa } from '../../../src/trust/pki.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';

const GOOD_TOKEN = 'abcdef.0123456789abcdef';
const GOOD_PIN = `sha256:${'a'.repeat(64)}`;

/** A listener that counts the TCP connections made to it and closes each at once. */
interface ConnectionTrap {
  port: number;
  connections: number;
  server: Server;
}

let dir: string;
let trap: ConnectionTrap;
let kubeconfig: string;

beforeAll(async () => {
  ensureCliBuilt('commands/register-cloud.js', ['src']);
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-register-request-'));
  const server = createServer((socket) => {
    trap.connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  trap = { port: (server.address() as AddressInfo).port, connections: 0, server };
  // An admin kubeconfig whose API server is the trap: creating the agent's ServiceAccount would connect there.
  const caData = Buffer.from((await createCa({ commonName: 'edge-ca' })).certPem).toString('base64');
  kubeconfig = join(dir, 'admin.kubeconfig');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- cluster: {server: 'https://127.0.0.1:${trap.port}', certificate-authority-data: ${caData}}`,
      '  name: edge',
      'users:',
      '- user: {token: admin-token}',
      '  name: admin',
      'contexts:',
      '- context: {cluster: edge, user: admin}',
      '  name: edge',
      'current-context: edge',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
});

afterAll(async () => {
  await new Promise((resolve) => trap?.server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** register-cloud's arguments with every address at the trap; `change` replaces or adds flags. */
function registerArgs(mode: 'host' | 'foreground', change: Record<string, string> = {}): string[] {
  const flags: Record<string, string> = {
    '--token': GOOD_TOKEN,
    '--hub-ca-cert-hash': GOOD_PIN,
    '--name': 'shop-1',
    '--kubeconfig': kubeconfig,
    '--data-dir': join(dir, 'agent'),
    '--discovery-timeout': '5s',
    ...(mode === 'host'
      ? { '--host': `root@127.0.0.1:${trap.port}`, '--ssh-timeout': '2', '--edgeadm-binary': process.execPath }
      : {}),
    ...change,
  };
  const hub = change.hub ?? `127.0.0.1:${trap.port}`;
  delete flags.hub;
  return [
    'register-cloud',
    hub,
    ...Object.entries(flags).flatMap(([flag, value]) => [flag, value]),
    '--create-service-account',
    ...(mode === 'foreground' ? ['--foreground'] : []),
  ];
}

/** Runs edgeadm with --json; returns the error code and how many connections the trap saw. */
async function refusal(args: string[]): Promise<{ exitCode: number; code: string | undefined; connections: number }> {
  const before = trap.connections;
  const { exitCode, stdout } = await runCli([...args, '--json'], { env: { EDGEADM_HOME: join(dir, 'home') } });
  let code: string | undefined;
  try {
    code = (JSON.parse(stdout) as { error?: { code?: string } }).error?.code;
  } catch {
    code = undefined;
  }
  return { exitCode, code, connections: trap.connections - before };
}

describe('the trap counts connections', () => {
  it('a well-formed register-cloud reaches the cluster to create its ServiceAccount, so the trap sees it', async () => {
    const result = await refusal(registerArgs('foreground'));
    expect(result.exitCode).not.toBe(0);
    expect(result.connections).toBeGreaterThan(0);
  });
});

describe('register-cloud refuses malformed input with no connection made and nothing created', () => {
  it.each([
    ['a malformed --token', { '--token': 'BADTOKEN' }, 'E_TOKEN_INVALID'],
    ['a malformed --hub-ca-cert-hash', { '--hub-ca-cert-hash': 'sha256:abc' }, 'E_CA_PIN_INVALID'],
    ['a --name that is not a DNS label', { '--name': 'Shop_1' }, 'E_HUB_CLUSTER_NAME'],
    ['a label Kubernetes refuses', { '--labels': 'bad key=x' }, 'E_LABELS_INVALID'],
    ['a malformed --discovery-timeout', { '--discovery-timeout': '5 minutes' }, 'E_DURATION_INVALID'],
    ['a malformed hub address', { hub: 'hub.example/x:9443' }, 'E_HUB_ADDRESS'],
    ['a malformed --proxy', { '--proxy': 'https://proxy.site.local:3128' }, 'E_PROXY_URL'],
  ])('%s, installing on --host', async (_name, change, code) => {
    const result = await refusal(registerArgs('host', change));
    expect(result).toEqual({ exitCode: 3, code, connections: 0 });
  });

  it('a malformed --token, in the foreground', async () => {
    const result = await refusal(registerArgs('foreground', { '--token': 'BADTOKEN' }));
    expect(result).toEqual({ exitCode: 3, code: 'E_TOKEN_INVALID', connections: 0 });
  });
});
