/**
 * No document can stop the hub (issue #30), with the real `hub serve`: a
 * hub restarted after any Rollout it accepted starts and serves `/healthz`
 * and that rollout, and a rollout stored before the document limits that it
 * cannot load is quarantined (reported in the list and the metrics) while it
 * serves everyone else.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { loadHubConfig } from '../../../src/hub/contract/hub-config.js';
import { HUB_STORE_FILE } from '../../../src/hub/server/open-store.js';
import { SqliteHubStore } from '../../../src/hub/store/sqlite-store.js';
import { runCli } from '../../support/cli.js';
import { hubRequest, startHubProcess, type HubProcess } from './hub-fixture.js';

const hubs: HubProcess[] = [];
afterEach(async () => {
  for (const hub of hubs.splice(0)) await hub.stop();
});

/** Starts a hub; again on `previous`'s data directory and port, when given (its admin.yaml names that port). */
async function startHub(previous?: HubProcess): Promise<HubProcess> {
  const hub = await startHubProcess(previous === undefined ? {} : { dataDir: previous.dataDir, port: previous.port });
  hubs.push(hub);
  return hub;
}

async function stopHub(hub: HubProcess): Promise<void> {
  hubs.splice(hubs.indexOf(hub), 1);
  await hub.stop();
}

/** A Rollout whose one custom resource's spec is `spec`, as JSON text (`spec` given as text, of any depth). */
function rolloutText(name: string, specText: string): string {
  const document = {
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name },
    spec: {
      resources: [
        { apiVersion: 'example.io/v1', kind: 'Deep', metadata: { name: 'deep', namespace: 'shop' }, spec: 'SPEC' },
      ],
      placement: { clusterSelector: 'env=prod' },
    },
  };
  return JSON.stringify(document).replace('"SPEC"', specText);
}

/** `depth` levels, arrays and objects mixed every `period` levels, as text. */
function nestedText(depth: number, period: number): string {
  let open = '';
  let close = '';
  for (let level = 0; level < depth; level += 1) {
    const isArray = level % period === 0;
    open += isArray ? '[' : '{"a":';
    close = (isArray ? ']' : '}') + close;
  }
  return `${open}"leaf"${close}`;
}

async function healthz(hub: HubProcess): Promise<number> {
  return (await hubRequest({ hub, path: '/healthz' })).status;
}

describe('hub: no document can stop it', { timeout: 300_000 }, () => {
  it('starts again and serves /healthz and every rollout it accepted, whatever their documents', async () => {
    const hub = await startHub();
    const token = loadHubConfig(hub.adminConfig).token;
    // The finding's document first (2,600 to 4,300 nested arrays were taken, then stopped every start), then generated ones.
    const samples = fc.sample(
      fc.oneof(
        fc.jsonValue().map((value) => JSON.stringify(value)),
        fc.tuple(fc.integer({ min: 1, max: 6000 }), fc.integer({ min: 1, max: 5 })).map(([d, p]) => nestedText(d, p)),
      ),
      { numRuns: 24, seed: 30 },
    );
    const accepted: string[] = [];
    for (const [index, specText] of [nestedText(3000, 1), ...samples].entries()) {
      const name = `doc-${index}`;
      const answer = await hubRequest({
        hub,
        path: `/hub/v1/rollouts/${name}`,
        method: 'PUT',
        token,
        headers: { 'content-type': 'application/json' },
        body: rolloutText(name, specText),
      });
      expect(answer.status, answer.body).not.toBe(500);
      if (answer.status < 300) accepted.push(name);
      else expect(JSON.parse(answer.body)).toMatchObject({ code: 'E_HUB_DOCUMENT_LIMIT' });
    }
    expect(accepted.length).toBeGreaterThan(0);
    await stopHub(hub);

    const restarted = await startHub(hub);
    expect(await healthz(restarted)).toBe(200);
    const list = await hubRequest({ hub: restarted, path: '/hub/v1/rollouts', token });
    const body = JSON.parse(list.body) as { rollouts: { name: string }[]; quarantined: unknown[] };
    expect(body.rollouts.map((rollout) => rollout.name).sort()).toEqual(accepted.sort());
    expect(body.quarantined).toEqual([]);
  });

  it('quarantines a stored rollout it cannot load, reports it, serves the rest, and lets an admin delete it', async () => {
    const hub = await startHub();
    const token = loadHubConfig(hub.adminConfig).token;
    const put = async (name: string, specText: string): Promise<number> =>
      (
        await hubRequest({
          hub,
          path: `/hub/v1/rollouts/${name}`,
          method: 'PUT',
          token,
          body: rolloutText(name, specText),
        })
      ).status;
    expect(await put('good', '{}')).toBe(201);
    expect(await put('deep', '{}')).toBe(201);
    await stopHub(hub);
    // What a hub before the document limits took and stored: 3,000 levels of nested objects.
    const store = await SqliteHubStore.open(join(hub.dataDir, HUB_STORE_FILE));
    const record = (await store.listRollouts()).find((rollout) => rollout.name === 'deep');
    const stored = await store.getRolloutRevision('deep', record!.revision);
    const document = JSON.parse(rolloutText('deep', nestedText(3000, 3000))) as unknown;
    await store.putRollout(record!, { ...stored!, document });
    await store.close();

    const restarted = await startHub(hub);
    expect(await healthz(restarted)).toBe(200);
    await restarted.waitForOutput(/rollout deep: quarantined/);
    const list = JSON.parse((await hubRequest({ hub: restarted, path: '/hub/v1/rollouts', token })).body) as {
      rollouts: { name: string }[];
      quarantined: { name: string; reason: string }[];
    };
    expect(list.rollouts.map((rollout) => rollout.name)).toEqual(['good']);
    expect(list.quarantined).toMatchObject([{ name: 'deep', reason: expect.stringMatching(/depth limit/) }]);
    const listed = await runCli(['hub', 'rollout', 'list', '--hub-config', restarted.adminConfig]);
    expect(listed.stdout, listed.stderr).toMatch(
      /Quarantined[^\n]*\n {2}deep {2}revision 1 {2}owner edgeadm-hub-admin: .*depth limit/,
    );
    const metrics = await hubRequest({ hub: restarted, path: '/metrics', token });
    expect(metrics.body).toMatch(/^edgeadm_hub_rollouts_quarantined 1$/m);
    const status = await hubRequest({ hub: restarted, path: '/hub/v1/rollouts/deep', token });
    expect(status.status).toBe(409);
    expect(JSON.parse(status.body)).toMatchObject({ code: 'E_ROLLOUT_QUARANTINED' });
    expect((await hubRequest({ hub: restarted, path: '/hub/v1/rollouts/deep', method: 'DELETE', token })).status).toBe(
      200,
    );
    const after = JSON.parse((await hubRequest({ hub: restarted, path: '/hub/v1/rollouts', token })).body) as {
      quarantined: unknown[];
    };
    expect(after.quarantined).toEqual([]);
  });
});
