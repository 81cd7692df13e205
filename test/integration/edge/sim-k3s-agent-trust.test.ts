/**
 * The SIMULATED k3s agent (test/support/sim-k3s: not k3s) keeps refusing
 * what real k3s's agent refuses now that, on an edge node, its server is
 * the edge-proxy: a server whose TLS certificate the cluster CA did not
 * sign (the edge-proxy's own CA, say) is never trusted, even when it
 * serves the right `/cacerts` bytes; a `/cacerts` whose hash is not the
 * token's ends the agent (k3s `pkg/clientaccess/token.go`: `getCACerts`
 * verifies the second fetch with the bundle, `validateCAHash`). So the
 * edge-proxy passes the agent's checks only because it serves with a
 * certificate of the server CA (the node's kubelet serving certificate).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dump } from 'js-yaml';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { simK3sNodePath } from '../../support/sim-k3s/fixture.js';
import { SimCertificateAuthority } from '../../support/sim-apiserver/pki.js';

const SIM_MAIN = fileURLToPath(new URL('../../support/sim-main.ts', import.meta.url));
/** Bound on waiting for the agent's log lines (it retries every second). */
const LOG_WAIT_MS = 30_000;

let serverCa: SimCertificateAuthority;
let impostorCa: SimCertificateAuthority;
let dir: string;
let server: Server | undefined;
let agent: ChildProcess | undefined;

/** An HTTPS server on 127.0.0.1 that answers `/cacerts` with `caPem` and nothing else. */
async function startServer(tls: { certPem: string; keyPem: string }, caPem: string): Promise<string> {
  server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    if (req.url === '/cacerts') {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end(caPem);
      return;
    }
    res.writeHead(503);
    res.end();
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `https://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** Runs the simulated agent with a config naming `url` and a token for `caPem`; returns its log so far on demand. */
async function runAgent(url: string, tokenCaPem: string): Promise<{ log: () => string; exited: Promise<number> }> {
  const config = join(dir, 'config.yaml');
  const hash = createHash('sha256').update(tokenCaPem).digest('hex');
  await writeFile(config, dump({ server: url, token: `K10${hash}::abcdef.0123456789abcdef`, 'node-name': 'edge-1' }));
  let output = '';
  agent = spawn(simK3sNodePath(), [SIM_MAIN, 'k3s', 'agent', '--config', config], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  agent.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  agent.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number>((resolve) => agent!.once('exit', (code) => resolve(code ?? -1)));
  return { log: () => output, exited };
}

beforeAll(async () => {
  serverCa = await SimCertificateAuthority.generate('k3s-server-ca');
  impostorCa = await SimCertificateAuthority.generate('edge-proxy-own-ca');
});

afterEach(async () => {
  agent?.kill('SIGKILL');
  agent = undefined;
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the simulated k3s agent trusts its server as k3s does', () => {
  it('never trusts a server whose certificate the cluster CA did not sign, even with the right /cacerts bytes', async () => {
    dir = await mkdtemp(join(tmpdir(), 'edgeadm-sim-k3s-trust-'));
    const url = await startServer(await impostorCa.issueServing(['127.0.0.1', 'localhost']), serverCa.certPem);
    const run = await runAgent(url, serverCa.certPem);
    await expect
      .poll(() => run.log().split(`Failed to validate connection to cluster at ${url}`).length, {
        timeout: LOG_WAIT_MS,
      })
      .toBeGreaterThan(2);
    expect(run.log()).not.toContain('Waiting to retrieve agent configuration');
    expect(run.log()).not.toContain('Remotedialer');
  });

  it('ends when /cacerts is not the CA its token names, even from a server the CA signed', async () => {
    dir = await mkdtemp(join(tmpdir(), 'edgeadm-sim-k3s-trust-'));
    const url = await startServer(await serverCa.issueServing(['127.0.0.1', 'localhost']), serverCa.certPem);
    const run = await runAgent(url, impostorCa.certPem);
    expect(await run.exited).toBe(1);
    expect(run.log()).toContain('token CA hash does not match the Cluster CA certificate hash');
  });
});
