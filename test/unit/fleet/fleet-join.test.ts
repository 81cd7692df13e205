/**
 * `fleetJoin` verifies the install package once per run, whatever the number
 * of hosts, and before it reaches any host. The hosts here refuse
 * connections, so the run stops at each host's connect phase; what counts is
 * how often the package was verified on the way.
 */
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { fleetJoin, type FleetJoinOptions } from '../../../src/fleet/fleet-join.js';
import type { FleetHost } from '../../../src/fleet/inventory/types.js';
import { silentLogger } from '../../../src/log/run-log.js';
import * as verify from '../../../src/packages/verify.js';
import { buildSimK3sPackage } from '../../support/sim-k3s/fixture.js';
import { buildSimKubeadmPackage } from '../../support/sim-kubeadm/fixture.js';
import { parseDiscoveryRequest } from '../../../src/trust/discovery.js';

vi.mock('../../../src/packages/verify.js', { spy: true });

const HOST_COUNT = 6;

let pkg: string;
let closedPort: number;

beforeAll(async () => {
  pkg = (await buildSimK3sPackage(mkdtempSync(join(tmpdir(), 'fleet-join-unit-')))).file;
  // A port where nothing listens: every connection is refused at once.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closedPort = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  vi.mocked(verify.verifyPackage).mockClear();
});

function node(index: number, packagePath?: string): FleetHost {
  return {
    name: `store-${index}`,
    address: '127.0.0.1',
    ssh: { user: 'root', port: closedPort },
    role: 'worker',
    groups: ['stores'],
    labels: {},
    isEdge: false,
    ...(packagePath === undefined ? {} : { packagePath }),
  };
}

function options(hosts: FleetHost[], installPackage: string | undefined): FleetJoinOptions {
  return {
    inventoryFile: 'inventory.yaml',
    hosts,
    edgeadmHome: mkdtempSync(join(tmpdir(), 'fleet-join-home-')),
    rollout: { concurrency: 3 },
    connect: { acceptNewHostKeys: true, connectTimeoutMs: 2_000, agentSocket: '', keyFiles: [] },
    logger: silentLogger,
    isDryRun: false,
    installPackage,
    requestedServiceManager: 'direct',
    discovery: parseDiscoveryRequest({
      endpoint: '127.0.0.1:6443',
      token: 'abcdef.0123456789abcdef',
      caCertHashes: [`sha256:${'0'.repeat(64)}`],
      timeoutMs: 5_000,
    }),
    ignorePreflightErrors: [],
  };
}

describe('fleetJoin', () => {
  it('verifies the package once for the whole run, not once per host', async () => {
    const hosts = Array.from({ length: HOST_COUNT }, (_, index) => node(index + 1));
    const result = await fleetJoin(options(hosts, pkg));
    expect(result.hosts.map((entry) => [entry.host, entry.status, entry.phase])).toEqual(
      hosts.map((host) => [host.name, 'failed', 'connect']),
    );
    expect(vi.mocked(verify.verifyPackage)).toHaveBeenCalledTimes(1);
  });

  it('verifies each distinct package once, the one a host names in the inventory among them', async () => {
    const other = (await buildSimK3sPackage(mkdtempSync(join(tmpdir(), 'fleet-join-unit-')))).file;
    const hosts = [node(1), node(2, other), node(3), node(4, other)];
    await fleetJoin(options(hosts, pkg));
    expect(
      vi
        .mocked(verify.verifyPackage)
        .mock.calls.map(([file]) => file)
        .sort(),
    ).toEqual([other, pkg].sort());
  });

  it('stops before any host when a host has no package', async () => {
    await expect(fleetJoin(options([node(1, pkg), node(2)], undefined))).rejects.toMatchObject({
      code: 'E_NO_PACKAGE',
      message: expect.stringContaining('store-2'),
    });
  });

  it('joins with the distribution the packages are for, and stops before any host when they differ', async () => {
    const kubeadm = (await buildSimKubeadmPackage(mkdtempSync(join(tmpdir(), 'fleet-join-unit-')))).file;
    // A kubeadm package without --distribution: each host gets as far as its connection (refused here).
    const result = await fleetJoin(options([node(1)], kubeadm));
    expect(result.hosts.map((entry) => [entry.status, entry.phase])).toEqual([['failed', 'connect']]);
    expect(result.hosts[0]!.error!.code).not.toBe('E_PACKAGE_DISTRIBUTION');
    await expect(fleetJoin(options([node(1), node(2, kubeadm)], pkg))).rejects.toMatchObject({
      code: 'E_PACKAGE_DISTRIBUTION',
      message: 'the install packages are for different distributions: k3s (store-1); kubeadm (store-2)',
    });
  });
});
