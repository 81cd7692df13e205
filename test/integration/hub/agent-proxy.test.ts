/**
 * The agent reaches the hub through an HTTP CONNECT proxy (a small real
 * proxy from test/support, on loopback): registration and the tunnel go
 * through it, kubectl through the hub works, the proxy credentials appear
 * in no output or log, a refusing proxy gives a clear error and the agent
 * keeps retrying with backoff, and a proxy that sends the tunnel to an
 * impostor gets nowhere (the hub CA pin holds end to end). The edge
 * cluster is the SIMULATED API server.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { load } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { startConnectProxy, type ConnectProxy } from '../../support/connect-proxy.js';
import {
  createHubToken,
  kubectlVia,
  outputAndLogs,
  registerArgs,
  startCli,
  startEdgeCluster,
  startHubProcess,
  waitFor,
  waitForState,
  type BackgroundCli,
  type EdgeCluster,
  type HubProcess,
} from './hub-fixture.js';
import { printedBy } from '../../support/run-output.js';

const PROXY_USER = 'site-042';
const PROXY_PASSWORD = 'pr0xy-Pa55word-never-logged';

/** A TLS server with a certificate from a CA the agent has never pinned. */
async function startImpostor(): Promise<{
  server: TlsServer;
  port: number;
  handshakes: () => number;
  /** Handshakes the agent completed with the impostor: after one, the agent would talk to it. */
  completed: () => number;
}> {
  const ca = await createCa({ commonName: 'impostor-ca' });
  const serving = await issueCertificate({
    ca,
    commonName: '127.0.0.1',
    usages: ['server'],
    validityDays: 1,
    ipAddresses: ['127.0.0.1'],
  });
  let attempts = 0;
  const server = createTlsServer({ cert: serving.certPem, key: serving.keyPem, ALPNProtocols: ['edgeadm-tunnel/1'] });
  let completed = 0;
  server.on('connection', () => (attempts += 1));
  server.on('secureConnection', (socket) => {
    completed += 1;
    socket.destroy();
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    handshakes: () => attempts,
    completed: () => completed,
  };
}

describe('hub: the agent through an HTTP proxy', { timeout: 180_000 }, () => {
  let hub: HubProcess;
  let edge: EdgeCluster;
  let proxy: ConnectProxy;
  let tunnel: BackgroundCli | undefined;

  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    hub = await startHubProcess();
    edge = await startEdgeCluster('proxied-1');
    proxy = await startConnectProxy({ credentials: { user: PROXY_USER, password: PROXY_PASSWORD } });
    const token = await createHubToken(hub);
    edge.agent = startCli([
      ...registerArgs({ hub, token, cluster: edge, labels: 'env=proxied' }),
      '--proxy',
      proxy.url(),
      '--foreground',
    ]);
    await waitForState(hub, 'proxied-1', 'Connected', edge.agent);
  });

  afterAll(async () => {
    await tunnel?.stop();
    await edge?.agent?.stop();
    await hub?.stop();
    await edge?.api.stop();
    await proxy?.stop();
  });

  it('registers and opens the tunnel through the proxy, with its credentials', async () => {
    const hubTarget = `127.0.0.1:${hub.port}`;
    const accepted = proxy.requests.filter((r) => r.status === 200);
    // Discovery (twice), the registration call, and the tunnel.
    expect(accepted.length).toBeGreaterThanOrEqual(4);
    expect(new Set(accepted.map((r) => r.target))).toEqual(new Set([hubTarget]));
    const basic = `Basic ${Buffer.from(`${PROXY_USER}:${PROXY_PASSWORD}`).toString('base64')}`;
    expect(accepted.every((r) => r.authorization === basic)).toBe(true);
    const version = await kubectlVia(hub.adminConfig, 'proxied-1', ['version', '-o', 'json']);
    expect(version.exitCode, printedBy(version)).toBe(0);
    expect(JSON.parse(version.stdout)).toMatchObject({ serverVersion: { gitVersion: 'v1.30.4+sim' } });
  });

  it('keeps the proxy in the agent state (0600) and its credentials out of every output and log', () => {
    const settingsPath = join(edge.dataDir, 'agent.yaml');
    expect(statSync(settingsPath).mode & 0o777).toBe(0o600);
    expect((load(readFileSync(settingsPath, 'utf8')) as { proxy?: string }).proxy).toBe(proxy.url());
    const printed = outputAndLogs(edge.agent as BackgroundCli);
    expect(printed).toContain(`through the HTTP proxy http://127.0.0.1:${proxy.port}`);
    expect(printed).not.toContain(PROXY_PASSWORD);
    expect(printed).not.toContain(Buffer.from(`${PROXY_USER}:${PROXY_PASSWORD}`).toString('base64'));
  });

  it('says clearly when the proxy refuses, retries with backoff, and connects once it allows', async () => {
    await edge.agent?.stop();
    await waitForState(hub, 'proxied-1', 'Disconnected');
    proxy.refuseWith = 403;
    tunnel = startCli(['agent', 'tunnel', '--data-dir', edge.dataDir]);
    await tunnel.waitForOutput(/E_TUNNEL_PROXY[^\n]*HTTP 403 Refused By Test Proxy[\s\S]*E_TUNNEL_PROXY/);
    expect(tunnel.output()).toContain(`the HTTP proxy http://127.0.0.1:${proxy.port} did not open a tunnel`);
    proxy.refuseWith = undefined;
    await waitForState(hub, 'proxied-1', 'Connected', tunnel);
    expect(outputAndLogs(tunnel)).not.toContain(PROXY_PASSWORD);
    await tunnel.stop();
    await waitForState(hub, 'proxied-1', 'Disconnected');
  });

  it('refuses a 407 with a hint about credentials', async () => {
    tunnel = startCli(['agent', 'tunnel', '--data-dir', edge.dataDir, '--proxy', proxy.url(false)]);
    await tunnel.waitForOutput(/HTTP 407/);
    await tunnel.stop();
    expect(outputAndLogs(tunnel)).toMatch(/E_TUNNEL_PROXY[^\n]*HTTP 407 Proxy Authentication Required/);
  });

  it('does not trust an impostor the proxy sends the tunnel to: the hub pin holds end to end', async () => {
    const impostor = await startImpostor();
    try {
      proxy.redirectTo = { host: '127.0.0.1', port: impostor.port };
      tunnel = startCli(['agent', 'tunnel', '--data-dir', edge.dataDir]);
      await waitFor('a second attempt at the impostor', () => (impostor.handshakes() >= 2 ? true : undefined));
      // Every attempt ended in the handshake, at the agent's check of the hub CA: the impostor got no tunnel.
      expect(impostor.completed()).toBe(0);
      await tunnel.waitForOutput(/E_TUNNEL_CONNECT[^\n]*(certificate|self.signed|verify)/i);
      await tunnel.stop();
    } finally {
      proxy.redirectTo = undefined;
      impostor.server.close();
    }
  });

  it('uses HTTPS_PROXY when no proxy is configured, and NO_PROXY turns it off', async () => {
    const second = await startEdgeCluster('env-proxied-1');
    try {
      const before = proxy.requests.length;
      const token = await createHubToken(hub);
      const agent = startCli(
        [...registerArgs({ hub, token, cluster: second, labels: 'env=proxied' }), '--foreground'],
        { HTTPS_PROXY: proxy.url(), NO_PROXY: 'example.com' },
      );
      try {
        await waitForState(hub, 'env-proxied-1', 'Connected', agent);
        expect(proxy.requests.length - before).toBeGreaterThanOrEqual(4);
      } finally {
        await agent.stop();
      }
      await waitForState(hub, 'env-proxied-1', 'Disconnected');
      const direct = startCli(['agent', 'tunnel', '--data-dir', second.dataDir], {
        HTTPS_PROXY: proxy.url(),
        NO_PROXY: '127.0.0.0/8',
      });
      try {
        const beforeDirect = proxy.requests.length;
        await waitForState(hub, 'env-proxied-1', 'Connected', direct);
        expect(proxy.requests.length).toBe(beforeDirect);
      } finally {
        await direct.stop();
      }
    } finally {
      await second.api.stop();
    }
  });
});
