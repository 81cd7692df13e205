/**
 * The hub end to end with the real kubectl: a hub, two edge clusters (each
 * a SIMULATED API server) registered with `register-cloud --foreground`,
 * and kubectl through `edgeadm kubectl`.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import {
  createHubToken,
  hubJson,
  kubectlVia,
  registerAndRun,
  startCli,
  startEdgeCluster,
  startHubProcess,
  waitForState,
  type EdgeCluster,
  type HubProcess,
} from './hub-fixture.js';
import { printedBy } from '../../support/run-output.js';

const POD = 'web-0';
/** Bytes sent through port-forward and echoed back. */
const PORT_FORWARD_BYTES = 100 * 1024 * 1024;

/** An echo server: what goes through port-forward comes back. */
async function startEcho(): Promise<Server> {
  const echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  return echo;
}

/** Sends `payload`, half-closes, and returns the SHA-256 of everything read until the peer closes. */
function echoDigest(port: number, payload: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const hash = createHash('sha256');
    socket.on('data', (chunk: Buffer) => hash.update(chunk));
    socket.on('end', () => resolve(hash.digest('hex')));
    socket.on('error', reject);
    socket.end(payload);
  });
}

function kubectlArgs(hubConfig: string, cluster: string, args: string[]): string[] {
  return ['kubectl', '--hub-config', hubConfig, '--cluster', cluster, '--', ...args];
}

describe('hub: kubectl through the tunnel', () => {
  let hub: HubProcess;
  let dev: EdgeCluster;
  let prod: EdgeCluster;
  let opsConfig: string;

  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    hub = await startHubProcess();
    dev = await startEdgeCluster('dev-1');
    prod = await startEdgeCluster('prod-1');
    for (const cluster of [dev, prod]) {
      cluster.api.setObject({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: POD, namespace: 'default' },
        spec: { containers: [{ name: 'web', image: 'nginx' }] },
      });
    }
    const token = await createHubToken(hub);
    // Both register at once, as a fleet's agents do.
    await Promise.all([
      registerAndRun({ hub, token, cluster: dev, labels: 'env=dev' }),
      registerAndRun({ hub, token, cluster: prod, labels: 'env=prod' }),
    ]);
    opsConfig = join(mkdtempSync(join(tmpdir(), 'hub-user-')), 'ops.yaml');
    const created = await runCli([
      'hub',
      'user',
      'create',
      'ops',
      '--clusters-selector',
      '',
      '--groups',
      'system:masters',
      '--output',
      opsConfig,
      '--hub-config',
      hub.adminConfig,
    ]);
    expect(created.exitCode, printedBy(created)).toBe(0);
  });

  afterAll(async () => {
    await dev?.agent?.stop();
    await prod?.agent?.stop();
    await hub?.stop();
    await dev?.api.stop();
    await prod?.api.stop();
  });

  it('lists both clusters as Connected with their version', async () => {
    const listed = await hubJson<{
      clusters: { name: string; state: string; kubernetesVersion?: string; labels: Record<string, string> }[];
    }>(['hub', 'clusters', 'list'], hub.adminConfig);
    expect(listed.clusters.map((c) => [c.name, c.state, c.kubernetesVersion, c.labels.env])).toEqual([
      ['dev-1', 'Connected', 'v1.30.4+sim', 'dev'],
      ['prod-1', 'Connected', 'v1.30.4+sim', 'prod'],
    ]);
  });

  it('gets pods of each cluster, impersonating the hub user', async () => {
    dev.api.clearRequests();
    const result = await kubectlVia(opsConfig, 'dev-1', ['get', 'pods', '-o', 'name']);
    expect(result.exitCode, printedBy(result)).toBe(0);
    expect(result.stdout).toBe(`pod/${POD}\n`);
    const list = dev.api.requests.find((r) => r.verb === 'list' && r.resource === 'pods');
    expect(list).toMatchObject({
      impersonatedUser: 'ops',
      impersonatedGroups: expect.arrayContaining(['system:masters']),
    });
    expect(
      prod.api.requests.some((r) => r.verb === 'list' && r.resource === 'pods' && r.impersonatedUser === 'ops'),
    ).toBe(false);
  });

  it('watches pods, and an event created at the edge arrives', async () => {
    const watch = startCli(kubectlArgs(opsConfig, 'dev-1', ['get', 'pods', '-w', '--output-watch-events']));
    try {
      await watch.waitForOutput(new RegExp(`ADDED\\s+${POD}\\s`));
      dev.api.setObject({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'arrives-later', namespace: 'default' },
        spec: { containers: [{ name: 'c', image: 'x' }] },
      });
      await watch.waitForOutput(/ADDED\s+arrives-later\s/);
    } finally {
      await watch.stop();
    }
  });

  it('follows logs (logs -f) as lines are appended', async () => {
    dev.api.appendPodLog('default', POD, 'booting');
    const logs = startCli(kubectlArgs(opsConfig, 'dev-1', ['logs', '-f', POD]));
    try {
      await logs.waitForOutput(/booting\n/);
      dev.api.appendPodLog('default', POD, 'serving requests');
      await logs.waitForOutput(/serving requests\n/);
      dev.api.endPodLog('default', POD);
      expect((await logs.process).exitCode).toBe(0);
    } finally {
      await logs.stop();
    }
  });

  it('execs with stdin and passes the exit code through', async () => {
    const cat = await kubectlVia(opsConfig, 'prod-1', ['exec', '-i', POD, '--', 'cat'], 'through the hub\n');
    expect(cat.exitCode, printedBy(cat)).toBe(0);
    expect(cat.stdout).toBe('through the hub\n');
    const failing = await kubectlVia(opsConfig, 'prod-1', ['exec', POD, '--', 'sh', '-c', 'exit 3']);
    expect(failing.exitCode).toBe(3);
    const exec = prod.api.requests.find((r) => r.subresource === 'exec');
    expect(exec).toMatchObject({ impersonatedUser: 'ops' });
  });

  it('port-forwards a large transfer intact (sha256)', async () => {
    const echo = await startEcho();
    prod.api.setPortForward('default', POD, 80, { host: '127.0.0.1', port: (echo.address() as AddressInfo).port });
    const forward = startCli(kubectlArgs(opsConfig, 'prod-1', ['port-forward', `pod/${POD}`, ':80']));
    try {
      const [, localPort] = await forward.waitForOutput(/Forwarding from 127\.0\.0\.1:(\d+) -> 80/);
      const payload = randomBytes(PORT_FORWARD_BYTES);
      const digest = await echoDigest(Number(localPort), payload);
      expect(digest).toBe(createHash('sha256').update(payload).digest('hex'));
    } finally {
      await forward.stop();
      echo.close();
    }
  }, 180_000);

  it('survives a hub restart: the agents reconnect and kubectl works again', async () => {
    await hub.stop();
    hub = await startHubProcess({ dataDir: hub.dataDir, port: hub.port });
    await waitForState(hub, 'dev-1', 'Connected', dev.agent);
    await waitForState(hub, 'prod-1', 'Connected', prod.agent);
    const result = await kubectlVia(opsConfig, 'dev-1', ['get', 'pod', POD, '-o', 'name']);
    expect(result.exitCode, printedBy(result)).toBe(0);
    expect(result.stdout).toBe(`pod/${POD}\n`);
  }, 120_000);
});
