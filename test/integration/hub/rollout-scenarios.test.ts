/**
 * Rollouts end to end: `hub serve`, four edge clusters (each a SIMULATED API
 * server whose simulated workload controllers write Deployment status)
 * registered with `register-cloud --foreground`, Rollouts applied and
 * steered with the real CLI, and every cluster's copy read back with the
 * real kubectl through the hub.
 *
 * Progress is followed by reading the status view (the operator API) until
 * a condition holds; no assertion depends on how long anything took. Where
 * a scenario says something must NOT happen before something else (a wave
 * before the soak), every view read along the way is checked for it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHubConfig } from '../../../src/hub/contract/hub-config.js';
import { HUB_ADMIN_USER } from '../../../src/hub/identity/authenticate.js';
import type { RolloutStatusView } from '../../../src/rollout/api.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli, type CliResult } from '../../support/cli.js';
import { UNPULLABLE_IMAGE_REGISTRY } from '../../support/sim-apiserver/workload-controllers.js';
import {
  createHubToken,
  hubRequest,
  kubectlVia,
  registerAndRun,
  startCli,
  startEdgeCluster,
  startHubProcess,
  waitFor,
  waitForState,
  type EdgeCluster,
  type HubProcess,
} from './hub-fixture.js';
import { printedBy } from '../../support/run-output.js';

const NAMESPACE = 'shop';
/** Exit codes of `hub rollout status --watch` (README, "Rollouts"). */
const WATCH_HALTED = 5;
const WATCH_ABORTED = 6;

let hub: HubProcess;
let adminToken: string;
const clusters: EdgeCluster[] = [];
const workDir = mkdtempSync(join(tmpdir(), 'edgeadm-rollout-scenarios-'));

/** The clusters, by name: labels say where they are and how large. */
const CLUSTER_LABELS: Record<string, string> = {
  'shop-1': 'env=test,region=eu',
  'shop-2': 'env=test,region=eu',
  'shop-3': 'env=test,region=us',
  'shop-4': 'env=test,region=us,size=large',
};

function cluster(name: string): EdgeCluster {
  const found = clusters.find((c) => c.name === name);
  if (found === undefined) throw new Error(`no cluster ${name}`);
  return found;
}

async function cli(args: string[], hubConfig = hub.adminConfig): Promise<CliResult> {
  return runCli([...args, '--hub-config', hubConfig]);
}

async function cliOk(args: string[], hubConfig = hub.adminConfig): Promise<CliResult> {
  const result = await cli(args, hubConfig);
  expect(result.exitCode, `edgeadm ${args.join(' ')}:\n${result.stdout}${result.stderr}`).toBe(0);
  return result;
}

/** Writes a Rollout document and applies it with the CLI; returns the revision it printed. */
async function apply(document: Record<string, unknown>, hubConfig = hub.adminConfig): Promise<number> {
  const file = join(workDir, `${String((document['metadata'] as { name: string }).name)}-${Date.now()}.yaml`);
  writeFileSync(file, dump(document));
  const result = await cliOk(['hub', 'rollout', 'apply', '-f', file, '--json'], hubConfig);
  return (JSON.parse(result.stdout) as { revision: number }).revision;
}

/** The status view with per-cluster rows, read from the operator API. */
async function status(name: string): Promise<RolloutStatusView> {
  const answer = await hubRequest({ hub, path: `/hub/v1/rollouts/${name}?clusters=true`, token: adminToken });
  if (answer.status !== 200) throw new Error(`status of ${name}: ${answer.status} ${answer.body}`);
  return JSON.parse(answer.body) as RolloutStatusView;
}

/** Reads the status until `check` holds, handing every view read on the way to `onView`. */
async function statusUntil(
  name: string,
  what: string,
  check: (view: RolloutStatusView) => boolean,
  onView: (view: RolloutStatusView) => void = () => {},
): Promise<RolloutStatusView> {
  let last: RolloutStatusView | undefined;
  const describe = (): string => `rollout ${name}: ${what} (last status: ${JSON.stringify(last)})`;
  return waitFor(describe, async () => {
    const view = await status(name);
    last = view;
    onView(view);
    return check(view) ? view : undefined;
  });
}

function phaseOf(view: RolloutStatusView, name: string): string | undefined {
  return view.clusters?.find((row) => row.cluster === name)?.phase;
}

/** A Rollout of a ConfigMap (per-cluster values) and a Deployment. */
function rolloutOf(
  name: string,
  options: {
    selector?: string;
    clusters?: string[];
    waves?: Array<number | string>;
    soakSeconds?: number;
    failureBudget?: number | string;
    maxUnavailable?: number | string;
    image?: string;
    version?: string;
    extra?: Record<string, unknown>[];
    onFailure?: 'halt' | 'rollback';
  },
): Record<string, unknown> {
  return {
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name },
    spec: {
      placement: {
        ...(options.selector === undefined ? {} : { clusterSelector: options.selector }),
        ...(options.clusters === undefined ? {} : { clusters: options.clusters }),
      },
      resources: [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } },
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `${name}-site`, namespace: NAMESPACE },
          data: { site: '${cluster.name}', region: '${label:region|none}', version: options.version ?? 'v1' },
        },
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name, namespace: NAMESPACE },
          spec: {
            replicas: 2,
            selector: { matchLabels: { app: name } },
            template: {
              metadata: { labels: { app: name } },
              spec: { containers: [{ name: 'web', image: options.image ?? 'registry.example/web:1' }] },
            },
          },
        },
        ...(options.extra ?? []),
      ],
      customization: {
        patches: [
          { clusterSelector: 'size=large', target: { kind: 'Deployment', name }, patch: { spec: { replicas: 4 } } },
        ],
      },
      strategy: {
        waves: options.waves ?? ['100%'],
        maxUnavailable: options.maxUnavailable ?? '100%',
        failureBudget: options.failureBudget ?? 0,
        soakSeconds: options.soakSeconds ?? 0,
        deadlineSeconds: 60,
        ...(options.onFailure === undefined ? {} : { onFailure: options.onFailure }),
      },
      status: {
        summaries: [
          { name: 'min-available', reduce: 'min', field: '.status.availableReplicas', kind: 'Deployment' },
          { name: 'total-available', reduce: 'sum', field: '.status.availableReplicas', kind: 'Deployment' },
        ],
      },
    },
  };
}

/** The site ConfigMap of a rollout on a cluster, through the hub with the real kubectl; undefined when absent. */
async function siteOn(clusterName: string, rollout: string): Promise<Record<string, string> | undefined> {
  const result = await kubectlVia(hub.adminConfig, clusterName, [
    'get',
    'configmap',
    `${rollout}-site`,
    '-n',
    NAMESPACE,
    '-o',
    'json',
  ]);
  if (result.exitCode !== 0) {
    expect(result.stderr).toMatch(/NotFound|not found/);
    return undefined;
  }
  return (JSON.parse(result.stdout) as { data: Record<string, string> }).data;
}

/**
 * The site ConfigMaps of a rollout on several clusters, read at once (each
 * read is an edgeadm and a kubectl process; one after another they made up
 * much of this file's time).
 */
async function sitesOn(names: string[], rollout: string): Promise<Map<string, Record<string, string> | undefined>> {
  const sites = await Promise.all(names.map((name) => siteOn(name, rollout)));
  return new Map(names.map((name, i) => [name, sites[i]]));
}

/** The copy revision a rollout's Deployment carries on a cluster, read with kubectl. */
async function deploymentRevision(clusterName: string, rollout: string): Promise<string | undefined> {
  const result = await kubectlVia(hub.adminConfig, clusterName, [
    'get',
    'deployment',
    rollout,
    '-n',
    NAMESPACE,
    '-o',
    'json',
  ]);
  if (result.exitCode !== 0) return undefined;
  const object = JSON.parse(result.stdout) as { metadata: { annotations?: Record<string, string> } };
  return object.metadata.annotations?.['edgeadm.io/rollout-revision'];
}

/** The image a rollout's Deployment runs on a cluster, read with kubectl. */
async function deploymentImage(clusterName: string, rollout: string): Promise<string | undefined> {
  const result = await kubectlVia(hub.adminConfig, clusterName, [
    'get',
    'deployment',
    rollout,
    '-n',
    NAMESPACE,
    '-o',
    'json',
  ]);
  if (result.exitCode !== 0) return undefined;
  const object = JSON.parse(result.stdout) as { spec: { template: { spec: { containers: { image: string }[] } } } };
  return object.spec.template.spec.containers[0]?.image;
}

/** Restarts a cluster's agent from its data directory (it registered already). */
async function restartAgent(edge: EdgeCluster): Promise<void> {
  edge.agent = startCli(['agent', 'tunnel', '--data-dir', edge.dataDir]);
  await waitForState(hub, edge.name, 'Connected', edge.agent);
}

beforeAll(async () => {
  ensureCliBuilt('index.js', ['src']);
  hub = await startHubProcess();
  adminToken = loadHubConfig(hub.adminConfig).token as string;
  const token = await createHubToken(hub);
  // The four clusters register at once, as a fleet's agents do.
  await Promise.all(
    Object.entries(CLUSTER_LABELS).map(async ([name, labels]) => {
      const edge = await startEdgeCluster(name);
      // Each cluster's own RBAC decides what a hub user may do there; rollouts write as their owner.
      edge.api.setObject({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'hub-admin' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: HUB_ADMIN_USER }],
      });
      clusters.push(edge);
      await registerAndRun({ hub, token, cluster: edge, labels });
    }),
  );
});

afterAll(async () => {
  for (const edge of clusters) await edge.agent?.stop();
  await hub?.stop();
  for (const edge of clusters) await edge.api.stop();
});

describe('rollouts through the hub, the real CLI and the real kubectl', () => {
  it('lands on each cluster with its own values, and the declared summaries add up across clusters', async () => {
    await apply(rolloutOf('values', { selector: 'env=test' }));
    const done = await statusUntil('values', 'complete', (view) => view.state === 'complete');
    const [sites, large] = await Promise.all([
      sitesOn(Object.keys(CLUSTER_LABELS), 'values'),
      kubectlVia(hub.adminConfig, 'shop-4', ['get', 'deployment', 'values', '-n', NAMESPACE, '-o', 'json']),
    ]);
    for (const [name, labels] of Object.entries(CLUSTER_LABELS)) {
      const region = /region=(\w+)/.exec(labels)?.[1];
      expect(sites.get(name)).toEqual({ site: name, region, version: 'v1' });
    }
    expect((JSON.parse(large.stdout) as { spec: { replicas: number } }).spec.replicas).toBe(4);
    // Three clusters run 2 replicas and the large one 4: min 2, sum 10, from four reports.
    const summaries = Object.fromEntries(done.summaries.map((s) => [s.name, s]));
    expect(summaries['min-available']).toMatchObject({ value: 2, reporting: 4 });
    expect(summaries['total-available']).toMatchObject({ value: 10, reporting: 4 });

    const text = await cliOk(['hub', 'rollout', 'status', 'values']);
    expect(text.stdout).toMatch(/complete/);
    expect(text.stdout).toMatch(/total-available.*10/);
  });

  it('starts the second wave only after the first is ready at the current revision and has soaked', async () => {
    const views: RolloutStatusView[] = [];
    await apply(rolloutOf('waves', { selector: 'env=test', waves: [1, '100%'], soakSeconds: 3 }));
    await statusUntil(
      'waves',
      'complete',
      (view) => view.state === 'complete',
      (view) => views.push(view),
    );
    const canary = views.at(-1)?.clusters?.find((row) => row.wave === 0)?.cluster as string;
    const later = Object.keys(CLUSTER_LABELS).filter((name) => name !== canary);
    for (const view of views) {
      const firstWave = view.waves[0];
      const laterStarted = later.some((name) => phaseOf(view, name) !== 'waiting');
      if (laterStarted) {
        // Whenever a later cluster had been started, the canary was ready and its wave done (soaked).
        expect(phaseOf(view, canary), JSON.stringify(view)).toBe('ready');
        expect(firstWave?.state, JSON.stringify(view)).toBe('done');
      }
    }
    // The soak was seen: the canary ready, its wave soaking, the others still waiting.
    expect(
      views.some(
        (view) => view.waves[0]?.state === 'soaking' && later.every((name) => phaseOf(view, name) === 'waiting'),
      ),
    ).toBe(true);
  });

  it('halts on a failing canary of a new revision and leaves later clusters on the previous one', async () => {
    await apply(rolloutOf('canary', { selector: 'env=test', waves: [1, '100%'] }));
    const first = await statusUntil('canary', 'complete', (view) => view.state === 'complete');
    const names = Object.keys(CLUSTER_LABELS);
    const revisions = await Promise.all(names.map((name) => deploymentRevision(name, 'canary')));
    const before = new Map(names.map((name, i) => [name, revisions[i]]));

    // Revision 2 cannot pull its image: the canary fails, the budget is 0, the rollout halts. Every
    // cluster reported ready for revision 1; that must not count for revision 2.
    const revision = await apply(
      rolloutOf('canary', { selector: 'env=test', waves: [1, '100%'], image: `${UNPULLABLE_IMAGE_REGISTRY}/web:2` }),
    );
    expect(revision).toBe(first.revision + 1);
    const halted = await statusUntil('canary', 'halted', (view) => view.state === 'halted');
    expect(halted.haltReason).toMatch(/failure budget/);
    const canary = halted.clusters?.find((row) => row.wave === 0);
    expect(canary?.phase).toBe('failed');
    const later = names.filter((n) => n !== canary?.cluster);
    const laterRevisions = await Promise.all(later.map((name) => deploymentRevision(name, 'canary')));
    later.forEach((name, i) => {
      expect(phaseOf(halted, name)).toBe('waiting');
      expect(laterRevisions[i], name).toBe(before.get(name));
    });
    const watch = await cli(['hub', 'rollout', 'status', 'canary', '--watch', '--json']);
    expect(watch.exitCode).toBe(WATCH_HALTED);
  });

  it('rolls the clusters a failing canary updated back to the previous revision (onFailure: rollback)', async () => {
    const options = { selector: 'env=test', waves: [1, '100%'], onFailure: 'rollback' as const };
    await apply(rolloutOf('fallback', options));
    const first = await statusUntil('fallback', 'complete', (view) => view.state === 'complete');
    const names = Object.keys(CLUSTER_LABELS);
    // Revision 2 cannot pull its image: the canary fails its gate, and the hub applies revision 1's document again.
    const failed = await apply(rolloutOf('fallback', { ...options, image: `${UNPULLABLE_IMAGE_REGISTRY}/web:2` }));
    expect(failed).toBe(first.revision + 1);
    const back = await statusUntil(
      'fallback',
      'rolled back and complete',
      (view) => view.revision === failed + 1 && view.state === 'complete',
    );
    expect(back.rollbackOf).toMatchObject({ revision: failed, reason: expect.stringMatching(/failure budget/) });
    const images = await Promise.all(names.map((name) => deploymentImage(name, 'fallback')));
    expect(images).toEqual(names.map(() => 'registry.example/web:1'));
  });

  it('pauses, resumes, prunes a removed object, undoes to the previous revision, and aborts', async () => {
    const extra = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'steer-extra', namespace: NAMESPACE } };
    await apply(rolloutOf('steer', { clusters: ['shop-1', 'shop-2'], extra: [extra] }));
    await statusUntil('steer', 'complete', (view) => view.state === 'complete');
    // An object the rollout did not create, with a name a later revision could collide with: never touched.
    const foreign = await kubectlVia(
      hub.adminConfig,
      'shop-1',
      ['apply', '-f', '-'],
      dump({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'steer-foreign', namespace: NAMESPACE } }),
    );
    expect(foreign.exitCode, printedBy(foreign)).toBe(0);

    await cliOk(['hub', 'rollout', 'pause', 'steer']);
    await apply(rolloutOf('steer', { clusters: ['shop-1', 'shop-2'], version: 'v2' }));
    const paused = await status('steer');
    expect(paused.state).toBe('paused');
    expect(paused.clusters?.every((row) => row.phase === 'waiting' || row.phase === 'ready')).toBe(true);
    expect((await siteOn('shop-1', 'steer'))?.['version']).toBe('v1');

    await cliOk(['hub', 'rollout', 'resume', 'steer']);
    await statusUntil('steer', 'complete at v2', (view) => view.state === 'complete');
    const steered = ['shop-1', 'shop-2'];
    const extraOn = (name: string): Promise<CliResult> =>
      kubectlVia(hub.adminConfig, name, ['get', 'configmap', 'steer-extra', '-n', NAMESPACE]);
    const [atV2, pruned, kept] = await Promise.all([
      sitesOn(steered, 'steer'),
      Promise.all(steered.map(extraOn)),
      kubectlVia(hub.adminConfig, 'shop-1', ['get', 'configmap', 'steer-foreign', '-n', NAMESPACE]),
    ]);
    steered.forEach((name, i) => {
      expect(atV2.get(name)?.['version'], name).toBe('v2');
      expect(pruned[i]?.exitCode, `steer-extra pruned from ${name}`).not.toBe(0);
    });
    expect(kept.exitCode, printedBy(kept)).toBe(0);

    await cliOk(['hub', 'rollout', 'undo', 'steer']);
    await statusUntil('steer', 'complete after undo', (view) => view.state === 'complete');
    const [atV1, restored] = await Promise.all([sitesOn(steered, 'steer'), Promise.all(steered.map(extraOn))]);
    steered.forEach((name, i) => {
      expect(atV1.get(name)?.['version'], name).toBe('v1');
      expect(restored[i]!.exitCode, printedBy(restored[i]!)).toBe(0);
    });

    await cliOk(['hub', 'rollout', 'abort', 'steer']);
    expect((await status('steer')).state).toBe('aborted');
    const watch = await cli(['hub', 'rollout', 'status', 'steer', '--watch', '--json']);
    expect(watch.exitCode).toBe(WATCH_ABORTED);
  });

  it('keeps within maxUnavailable: never more clusters unavailable at once than allowed', async () => {
    const views: RolloutStatusView[] = [];
    await apply(rolloutOf('narrow', { selector: 'env=test', maxUnavailable: 1 }));
    await statusUntil(
      'narrow',
      'complete',
      (view) => view.state === 'complete',
      (view) => views.push(view),
    );
    for (const view of views) {
      const unavailable = (view.clusters ?? []).filter((row) =>
        ['applying', 'progressing', 'failed', 'offline-pending'].includes(row.phase),
      );
      expect(unavailable.length, JSON.stringify(view.clusters)).toBeLessThanOrEqual(1);
    }
  });

  it('does not change a held cluster, and shows it as held, not failed', async () => {
    await apply(rolloutOf('hold', { selector: 'region=eu' }));
    await statusUntil('hold', 'complete', (view) => view.state === 'complete');
    await cliOk(['hub', 'clusters', 'hold', 'shop-2', '--reason', 'opening hours']);
    await apply(rolloutOf('hold', { selector: 'region=eu', version: 'v2' }));
    const view = await statusUntil(
      'hold',
      'shop-1 ready at v2',
      (v) => phaseOf(v, 'shop-1') === 'ready' && v.revision === 2,
    );
    expect(phaseOf(view, 'shop-2')).toBe('held');
    expect(view.counts.failed).toBe(0);
    const held = await sitesOn(['shop-1', 'shop-2'], 'hold');
    expect(held.get('shop-1')?.['version']).toBe('v2');
    expect(held.get('shop-2')?.['version']).toBe('v1');

    await cliOk(['hub', 'clusters', 'release', 'shop-2']);
    await statusUntil(
      'hold',
      'complete after release',
      (v) => v.state === 'complete' && phaseOf(v, 'shop-2') === 'ready',
    );
    expect((await siteOn('shop-2', 'hold'))?.['version']).toBe('v2');
  });

  it('brings a cluster that was offline through two revisions to the latest one when it returns', async () => {
    await apply(rolloutOf('offline', { clusters: ['shop-3', 'shop-4'] }));
    await statusUntil('offline', 'complete', (view) => view.state === 'complete');
    const away = cluster('shop-3');
    await away.agent?.stop();
    await waitForState(hub, 'shop-3', 'Disconnected');

    await apply(rolloutOf('offline', { clusters: ['shop-3', 'shop-4'], version: 'v2' }));
    await apply(rolloutOf('offline', { clusters: ['shop-3', 'shop-4'], version: 'v3' }));
    const pending = await statusUntil(
      'offline',
      'shop-4 ready, shop-3 offline-pending',
      (view) => phaseOf(view, 'shop-4') === 'ready' && phaseOf(view, 'shop-3') === 'offline-pending',
    );
    expect(pending.counts['offline-pending']).toBe(1);

    await restartAgent(away);
    const back = await statusUntil('offline', 'complete with shop-3 back', (view) => view.state === 'complete');
    expect(back.counts.ready).toBe(2);
    expect((await siteOn('shop-3', 'offline'))?.['version']).toBe('v3');
  });

  it('continues a rollout where it was after a hub restart in the middle of a wave', async () => {
    await apply(rolloutOf('restart', { selector: 'env=test', waves: [1, '100%'], soakSeconds: 2 }));
    const mid = await statusUntil('restart', 'canary delivered', (view) =>
      (view.clusters ?? []).some((row) => row.wave === 0 && row.phase !== 'waiting'),
    );
    await hub.stop();
    hub = await startHubProcess({ dataDir: hub.dataDir, port: hub.port });
    const resumed = await status('restart');
    expect(resumed.revision).toBe(mid.revision);
    expect(resumed.clusters?.find((row) => row.wave === 0)?.phase).not.toBe('waiting');
    for (const name of Object.keys(CLUSTER_LABELS)) await waitForState(hub, name, 'Connected');
    await statusUntil('restart', 'complete after the restart', (view) => view.state === 'complete');
    const sites = await sitesOn(Object.keys(CLUSTER_LABELS), 'restart');
    for (const name of Object.keys(CLUSTER_LABELS)) expect(sites.get(name)?.['site']).toBe(name);
  });

  it('refuses a scoped user a Rollout that reaches outside their clusters', async () => {
    const euConfig = join(workDir, 'eu-ops.yaml');
    await cliOk([
      'hub',
      'user',
      'create',
      'eu-ops',
      '--clusters-selector',
      'region=eu',
      '--groups',
      'system:masters',
      '--output',
      euConfig,
    ]);
    const file = join(workDir, 'outside.yaml');
    writeFileSync(file, dump(rolloutOf('outside', { selector: 'env=test' })));
    const refused = await cli(['hub', 'rollout', 'apply', '-f', file], euConfig);
    expect(refused.exitCode).not.toBe(0);
    expect(`${refused.stdout}${refused.stderr}`).toMatch(/region=eu|outside|scope/i);
    const listed = await cliOk(['hub', 'rollout', 'list', '--json'], euConfig);
    expect(JSON.stringify(JSON.parse(listed.stdout))).not.toMatch(/"outside"/);
    // Nothing reached any cluster.
    const outside = await sitesOn(Object.keys(CLUSTER_LABELS), 'outside');
    for (const name of Object.keys(CLUSTER_LABELS)) expect(outside.get(name), name).toBeUndefined();

    // Within their clusters, the same user may roll out.
    await apply(rolloutOf('inside', { selector: 'region=eu' }), euConfig);
    await statusUntil('inside', 'complete', (view) => view.state === 'complete');
    const inside = await sitesOn(['shop-1', 'shop-3'], 'inside');
    expect(inside.get('shop-1')?.['site']).toBe('shop-1');
    expect(inside.get('shop-3')).toBeUndefined();
  });

  it('deletes a rollout from every cluster, from an offline one when it returns', async () => {
    await apply(rolloutOf('gone', { clusters: ['shop-1', 'shop-3'] }));
    await statusUntil('gone', 'complete', (view) => view.state === 'complete');
    const away = cluster('shop-3');
    await away.agent?.stop();
    await waitForState(hub, 'shop-3', 'Disconnected');

    const deleted = JSON.parse((await cliOk(['hub', 'rollout', 'delete', 'gone', '--json'])).stdout) as {
      removed: string[];
      pendingRemovals: string[];
    };
    expect(deleted.pendingRemovals).toEqual(['shop-3']);
    await waitFor('shop-1 to lose the copy', async () =>
      (await siteOn('shop-1', 'gone')) === undefined ? true : undefined,
    );

    await restartAgent(away);
    await waitFor('shop-3 to lose the copy on return', async () =>
      (await siteOn('shop-3', 'gone')) === undefined ? true : undefined,
    );
    const deployment = await kubectlVia(hub.adminConfig, 'shop-3', ['get', 'deployment', 'gone', '-n', NAMESPACE]);
    expect(deployment.exitCode).not.toBe(0);
  });
});
