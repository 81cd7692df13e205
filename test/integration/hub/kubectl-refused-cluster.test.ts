/**
 * `edgeadm kubectl --cluster NAME` for a cluster the hub refuses: one error
 * in the hub's words, before kubectl runs (newcomer point 13). A real hub.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { printedBy } from '../../support/run-output.js';
import { kubectlVia, startHubProcess, type HubProcess } from './hub-fixture.js';

describe('edgeadm kubectl for a cluster the hub refuses', () => {
  let hub: HubProcess;

  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    hub = await startHubProcess();
  }, 60_000);

  afterAll(async () => {
    await hub?.stop();
  });

  it('says once what the hub said, and runs no kubectl', async () => {
    const result = await kubectlVia(hub.adminConfig, 'store-999', ['get', 'nodes']);
    expect(result.exitCode, printedBy(result)).toBe(3);
    expect(result.stderr).toContain('the hub refused cluster "store-999"');
    expect(result.stderr).toContain('code: E_HUB_FORBIDDEN');
    expect(result.stderr).not.toContain("couldn't get current server API group list");
  });
});
