/**
 * A rollout copy applied to the simulated API server (test/support/sim-apiserver,
 * not kube-apiserver) through edgeadm's KubeClient: server-side apply of every
 * object, pruning of what a revision drops, and nothing touched that the rollout
 * did not create.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../../src/kube/client.js';
import { CopyApplier, ROLLOUT_FIELD_MANAGER } from '../../../src/rollout/apply-copy.js';
import { ROLLOUT_LABEL, ROLLOUT_REVISION_ANNOTATION, renderCopy } from '../../../src/rollout/render.js';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { rollout } from '../../unit/rollout/fixtures.js';

let server: SimApiServer;
let client: KubeClient;
const cluster = { name: 'store-042', labels: { env: 'prod', region: 'eu' }, properties: { tag: '2.1' } };

function copy(revision: number, spec = rollout()) {
  const result = renderCopy(spec, revision, cluster);
  if (!result.ok) throw new Error(result.failure.message);
  return result.copy;
}

beforeAll(async () => {
  server = await startSimApiServer();
  client = new KubeClient({ contextName: 'sim', server: server.url, caPem: server.caPem, token: server.adminToken });
});

afterAll(async () => {
  await server.stop();
});

describe('CopyApplier against the simulated API server', () => {
  it('applies every object of a copy under the rollout field manager, and reports its revision', async () => {
    const applier = new CopyApplier(client);
    const first = copy(1);
    expect(await applier.apply('web', first)).toEqual({ applied: 3, pruned: 0 });
    const configMap = await client.get<{ data?: Record<string, string>; metadata: Record<string, unknown> } & object>(
      '/api/v1/namespaces/shop/configmaps/site',
    );
    expect(configMap?.data).toEqual({ site: 'store-042', region: 'eu' });
    expect((configMap?.metadata['annotations'] as Record<string, string>)[ROLLOUT_REVISION_ANNOTATION]).toBe(
      first.revision,
    );
    expect(JSON.stringify(configMap?.metadata['managedFields'])).toContain(ROLLOUT_FIELD_MANAGER);
    const report = await applier.report('web', 'store-042');
    expect(report).toMatchObject({ cluster: 'store-042', revision: first.revision });
  });

  it('prunes an object a later revision drops, but never one that lost the rollout label', async () => {
    const applier = new CopyApplier(client);
    const spec = rollout();
    spec.resources.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'extra', namespace: 'shop' } });
    spec.resources.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'adopted', namespace: 'shop' } });
    await applier.apply('web', copy(2, spec));
    // Someone takes 'adopted' over: it no longer carries the rollout's label.
    await client.mergePatch('/api/v1/namespaces/shop/configmaps/adopted', {
      metadata: { labels: { [ROLLOUT_LABEL]: null } },
    });
    expect(await applier.apply('web', copy(3))).toEqual({ applied: 3, pruned: 1 });
    expect(await client.get('/api/v1/namespaces/shop/configmaps/extra')).toBeUndefined();
    expect(await client.get('/api/v1/namespaces/shop/configmaps/adopted')).toBeDefined();
  });

  it('reads back as its own only the objects that still carry the rollout label', async () => {
    const applier = new CopyApplier(client);
    const current = copy(4);
    await applier.apply('web', current);
    expect((await applier.readBack('web', 'store-042'))?.objects.map((o) => o.name)).toContain('web');
    await client.mergePatch('/apis/apps/v1/namespaces/shop/deployments/web', {
      metadata: { labels: { [ROLLOUT_LABEL]: 'someone-else' } },
    });
    const readBack = await applier.readBack('web', 'store-042');
    expect(readBack?.report).toMatchObject({ revision: '', readiness: 'progressing' });
    expect(readBack?.report.message).toMatch(/Deployment\/web no longer carries the rollout label/);
    expect(readBack?.objects.map((o) => o.name)).not.toContain('web');
    await client.mergePatch('/apis/apps/v1/namespaces/shop/deployments/web', {
      metadata: { labels: { [ROLLOUT_LABEL]: 'web' } },
    });
  });

  it('removes everything the rollout applied', async () => {
    const applier = new CopyApplier(client);
    expect(await applier.remove('web')).toBe(3);
    expect(await client.get('/apis/apps/v1/namespaces/shop/deployments/web')).toBeUndefined();
    expect(await applier.report('web', 'store-042')).toBeUndefined();
  });
});
