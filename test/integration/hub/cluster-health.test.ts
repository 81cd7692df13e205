/**
 * Cluster health end to end: a hub started in this process, a real agent
 * process (`register-cloud --foreground`, with the ServiceAccount
 * `--create-service-account` makes, so the agent reads only what its RBAC
 * gives it) and a SIMULATED API server with two nodes and the
 * installed-package record `init` writes, whose serving certificate
 * expires in 20 days. The agent reads its nodes every 200 ms here
 * (EDGEADM_TEST_HEALTH_READ_MS) instead of 15 s.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { connect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHub, type RunningHub } from '../../../src/hub/server/hub-server.js';
import { silentLogger } from '../../../src/log/run-log.js';
import type { ClusterView } from '../../../src/hub/contract/views.js';
import { installedPackageObject } from '../../../src/health/installed-package.js';
import { TEST_HEALTH_READ_ENV } from '../../../src/health/wire.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import { printedBy } from '../../support/run-output.js';
import type { CertificateRow } from '../../../src/hub-client/certificate-report.js';
import { parsePemCertificates } from '../../../src/trust/pem.js';
import {
  createHubToken,
  hubRequest,
  registerArgs,
  startCli,
  startEdgeCluster,
  waitFor,
  type EdgeCluster,
  type HubAddress,
} from './hub-fixture.js';

const INSTALLED = {
  name: 'edge-kubeadm-v1.34.4-amd64',
  version: 'v1.34.4',
  distribution: 'kubeadm',
  manifestSha256: 'd'.repeat(64),
  signer: `sha256:${'e'.repeat(64)}`,
  action: 'init' as const,
  at: '2026-11-29T04:00:00.000Z',
};

function nodeObject(name: string, ready: 'True' | 'False'): Parameters<EdgeCluster['api']['setObject']>[0] {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
    status: {
      conditions: [{ type: 'Ready', status: ready, reason: ready === 'True' ? 'KubeletReady' : 'KubeletDown' }],
    },
  } as Parameters<EdgeCluster['api']['setObject']>[0];
}

/** The serving certificate's expiry, read by a TLS handshake of the test's own. */
function servingNotAfter(url: string, caPem: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: Number(port), ca: caPem }, () => {
      const certificate = socket.getPeerX509Certificate();
      socket.destroy();
      resolve(new Date(certificate!.validTo).toISOString());
    });
    socket.once('error', reject);
  });
}

describe('hub: each cluster health as its agent reads it', { timeout: 180_000 }, () => {
  let hub: RunningHub | undefined;
  let address: HubAddress;
  let dataDir: string;
  let cluster: EdgeCluster;
  let adminToken: string;

  const startTheHub = async (): Promise<void> => {
    hub = await startHub({ listen: `127.0.0.1:${address?.port ?? 0}`, dataDir, logger: silentLogger });
    address = { dataDir, port: hub.port, adminConfig: hub.adminConfigPath, caPin: hub.caPin };
    adminToken = /^token: (\S+)$/m.exec(readFileSync(hub.adminConfigPath, 'utf8'))![1]!;
  };
  const view = async (): Promise<ClusterView> => {
    const answer = await hubRequest({ hub: address, path: `/hub/v1/clusters/${cluster.name}`, token: adminToken });
    expect(answer.status, answer.body).toBe(200);
    return JSON.parse(answer.body) as ClusterView;
  };

  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    dataDir = mkdtempSync(join(tmpdir(), 'edgeadm-hub-health-'));
    await startTheHub();
    // Its serving certificate expires in 20 days: within the 30 days `hub certs check` warns of.
    cluster = await startEdgeCluster('shop-17', { servingValidityDays: 20 });
    cluster.api.setObject(nodeObject('edge-a', 'True'));
    cluster.api.setObject(nodeObject('edge-b', 'True'));
    cluster.api.setObject(installedPackageObject(INSTALLED) as Parameters<EdgeCluster['api']['setObject']>[0]);
    const token = await createHubToken(address);
    cluster.agent = startCli(
      [
        ...registerArgs({ hub: address, token, cluster, labels: 'env=shop' }),
        '--create-service-account',
        '--foreground',
      ],
      { [TEST_HEALTH_READ_ENV]: '200' },
    );
  });

  afterAll(async () => {
    await cluster?.agent?.stop();
    await hub?.close();
    await cluster?.api.stop();
  });

  it('shows the nodes, the certificates and the installed package once the agent connects', async () => {
    const health = await waitFor('the first health report', async () => (await view()).health);
    expect(health.nodes).toEqual({ total: 2, ready: 2, notReady: [] });
    expect(health.kubernetesVersion).toBe('v1.30.4+sim');
    expect(health.package).toEqual(INSTALLED);
    const ca = parsePemCertificates(cluster.api.caPem)[0]!.certificate;
    expect(health.certificates).toEqual([
      { kind: 'cluster-ca', subject: ca.subject.replace(/\n/g, ', '), notAfter: new Date(ca.validTo).toISOString() },
      {
        kind: 'apiserver-serving',
        subject: expect.any(String) as string,
        notAfter: await servingNotAfter(cluster.api.url, cluster.api.caPem),
      },
    ]);
    expect(Date.parse(health.reportedAt)).toBeLessThanOrEqual(Date.now());
  });

  it('names a node that stops being Ready, and sees it come back', async () => {
    cluster.api.setObject(nodeObject('edge-b', 'False'));
    const down = await waitFor('edge-b not Ready in the view', async () => {
      const nodes = (await view()).health?.nodes;
      return nodes?.ready === 1 ? nodes : undefined;
    });
    expect(down).toEqual({ total: 2, ready: 1, notReady: ['edge-b'] });
    cluster.api.setObject(nodeObject('edge-b', 'True'));
    await waitFor('edge-b Ready again', async () => ((await view()).health?.nodes?.ready === 2 ? true : undefined));
  });

  it('names the certificate that expires within 30 days in `hub certs check`, and exits 9 for it', async () => {
    const checked = await runCli(['hub', 'certs', 'check', '--hub-config', address.adminConfig, '--json']);
    expect(checked.exitCode, printedBy(checked)).toBe(9);
    const report = JSON.parse(checked.stdout) as { within: number; certificates: CertificateRow[] };
    expect(report.within).toBe(30);
    const expiring = report.certificates.filter((row) => row.status !== 'ok');
    expect(expiring).toEqual([
      expect.objectContaining({ cluster: 'shop-17', kind: 'apiserver-serving', status: 'expiring', daysLeft: 19 }),
    ]);
    // Everything else the fleet depends on is there too, soonest first.
    expect(report.certificates.map((row) => `${row.cluster ?? '(hub)'}/${row.kind}`).sort()).toEqual([
      '(hub)/hub-ca',
      '(hub)/hub-serving',
      'shop-17/apiserver-serving',
      'shop-17/cluster-ca',
      'shop-17/hub-client',
    ]);
    expect(report.certificates[0]?.kind).toBe('apiserver-serving');
    const table = await runCli(['hub', 'certs', 'check', '--hub-config', address.adminConfig]);
    expect(table.stdout).toMatch(/^shop-17\s+apiserver-serving\s+\S+\s+19\s+EXPIRING\s+CN=sim-apiserver$/m);
    const narrower = await runCli(['hub', 'certs', 'check', '--hub-config', address.adminConfig, '--within', '10']);
    expect(narrower.exitCode, printedBy(narrower)).toBe(0);
    // The metrics carry the same expiry, for the alert rule.
    const metrics = await hubRequest({ hub: address, path: '/metrics', token: adminToken });
    const serving = expiring[0]!;
    expect(metrics.body).toContain(
      `edgeadm_hub_certificate_expiry_seconds{cluster="shop-17",kind="apiserver-serving"} ${Date.parse(serving.notAfter) / 1000}`,
    );
    // And the attention list names it, with the 30 days by default.
    const attention = await hubRequest({ hub: address, path: '/hub/v1/attention', token: adminToken });
    expect(JSON.parse(attention.body)).toMatchObject({
      rows: [{ cluster: { name: 'shop-17' }, reasons: [{ kind: 'certificate-expiring' }] }],
    });
  });

  it('keeps the last report while the cluster is away, and across a restart of the hub', async () => {
    cluster.api.setObject(nodeObject('edge-a', 'False'));
    await waitFor('edge-a not Ready in the view', async () =>
      (await view()).health?.nodes?.notReady.includes('edge-a') === true ? true : undefined,
    );
    await cluster.agent!.stop();
    await waitFor('the cluster Disconnected', async () => ((await view()).state === 'Disconnected' ? true : undefined));
    expect((await view()).health?.nodes).toEqual({ total: 2, ready: 1, notReady: ['edge-a'] });
    await hub!.close();
    hub = undefined;
    await startTheHub();
    const after = await view();
    expect(after.state).toBe('Disconnected');
    expect(after.health?.nodes).toEqual({ total: 2, ready: 1, notReady: ['edge-a'] });
    expect(after.health?.package?.manifestSha256).toBe(INSTALLED.manifestSha256);
  });
});
