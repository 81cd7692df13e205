/**
 * join --enable-edge on a cluster made without --enable-edge fails in the
 * discovery phase, which installs nothing, not after the package was
 * uploaded and installed (newcomer point 25). A simulated API server (not
 * kube-apiserver) with no edge settings.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JoinData } from '../../../src/cluster/join.js';
import { joinPhases } from '../../../src/cluster/join.js';
import { parseBootstrapToken } from '../../../src/trust/bootstrap-token.js';
import type { DiscoveryResult } from '../../../src/trust/discovery.js';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/sim-apiserver.js';

describe('join --enable-edge against a cluster without edge settings', () => {
  let api: SimApiServer;

  beforeAll(async () => {
    api = await startSimApiServer();
  });

  afterAll(async () => {
    await api?.stop();
  });

  it('fails in the discovery phase with E_EDGE_NOT_ENABLED', async () => {
    const discovery = { server: api.url, caPem: api.caPem } as DiscoveryResult;
    const lines: string[] = [];
    const ctx = {
      enableEdge: true,
      isControlPlane: false,
      discovery,
      token: parseBootstrapToken('abcdef.0123456789abcdef'),
      say: (line: string) => lines.push(line),
    } as unknown as JoinData;
    const phase = joinPhases().find((p) => p.name === 'discovery')!;
    await expect(phase.run!(ctx)).rejects.toMatchObject({ code: 'E_EDGE_NOT_ENABLED' });
    expect(lines).toEqual([]);
  });
});
