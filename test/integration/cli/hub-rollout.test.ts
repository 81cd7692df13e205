/**
 * `edgeadm hub rollout …` and `hub clusters hold|release|set-properties`
 * through the real CLI (bin/run.js) against a FAKE of the operator API
 * (test/support/fake-operator-api.ts, real HTTPS with a test CA): what
 * people and scripts read (the tables, --json), the exit codes of
 * `status --watch`, and that a bad Rollout file never reaches the network.
 * The real hub's side is in test/integration/hub/rollout-example.test.ts.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump, load } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import HubRolloutApply from '../../../src/commands/hub/rollout/apply.js';
import type { ApplyResult, RolloutStatusView } from '../../../src/rollout/api.js';
import { readRolloutFile } from '../../../src/rollout/rollout-file.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli, type CliResult } from '../../support/cli.js';
import { startFakeOperatorApi, zeroCounts, type FakeOperatorApi } from '../../support/fake-operator-api.js';
import { printedBy } from '../../support/run-output.js';

let fake: FakeOperatorApi;
const dir = mkdtempSync(join(tmpdir(), 'hub-rollout-cli-'));

function hub(args: string[], input?: string): Promise<CliResult> {
  return runCli([...args, '--hub-config', fake.hubConfigPath], { ...(input === undefined ? {} : { input }), cwd: dir });
}

function rolloutFile(name: string, spec: Record<string, unknown> = {}): string {
  const path = join(dir, `${name}.yaml`);
  writeFileSync(
    path,
    dump({
      apiVersion: 'edgeadm.io/v1alpha1',
      kind: 'Rollout',
      metadata: { name },
      spec: {
        placement: { clusterSelector: 'env=prod' },
        resourcesFrom: [{ path: 'manifests' }],
        ...spec,
      },
    }),
  );
  return path;
}

/** A status with two waves, a summary and cluster rows. */
function progressingStatus(): Partial<RolloutStatusView> {
  return {
    currentWave: 1,
    waves: [
      { index: 0, clusters: 1, state: 'done', counts: { ...zeroCounts(), ready: 1 } },
      { index: 1, clusters: 3, state: 'started', counts: { ...zeroCounts(), ready: 1, progressing: 1, held: 1 } },
    ],
    counts: { ...zeroCounts(), ready: 2, progressing: 1, held: 1 },
    summaries: [{ name: 'min-available', value: 2, reporting: 3 }],
    clusters: [
      { cluster: 'store-1', wave: 0, phase: 'ready', targetRevision: '1-aaa' },
      { cluster: 'store-2', wave: 1, phase: 'held', message: 'opening hours' },
    ],
  };
}

beforeAll(async () => {
  ensureCliBuilt('index.js', ['src']);
  fake = await startFakeOperatorApi();
  mkdirSync(join(dir, 'manifests'));
  writeFileSync(
    join(dir, 'manifests', 'site.yaml'),
    dump({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'site', namespace: 'shop' }, data: { a: 'b' } }),
  );
});
afterAll(() => fake.close());

describe('edgeadm hub rollout apply', () => {
  it('sends the file with its referenced manifests and prints the revision; --json prints the result', async () => {
    const path = rolloutFile('web');
    const created = await hub(['hub', 'rollout', 'apply', '-f', path]);
    expect(created.exitCode, printedBy(created)).toBe(0);
    expect(created.stdout).toBe('rollout web created: revision 1\n');
    const stored = fake.rollouts.get('web')?.document as { spec: Record<string, unknown> };
    expect(stored.spec['resourcesFrom']).toBeUndefined();
    expect((stored.spec['resources'] as Array<{ metadata: { name: string } }>)[0]?.metadata.name).toBe('site');
    const again = await hub(['hub', 'rollout', 'apply', '-f', path, '--json']);
    expect(JSON.parse(again.stdout)).toEqual({ name: 'web', revision: 1, isUnchanged: true, isCreated: false });
  });

  it('reads the Rollout from stdin with -f -', async () => {
    const text = dump({
      apiVersion: 'edgeadm.io/v1alpha1',
      kind: 'Rollout',
      metadata: { name: 'from-stdin' },
      spec: { placement: { clusters: ['store-1'] }, resourcesFrom: [{ path: 'manifests' }] },
    });
    const result = await hub(['hub', 'rollout', 'apply', '-f', '-'], text);
    expect(result.exitCode, printedBy(result)).toBe(0);
    expect(fake.rollouts.has('from-stdin')).toBe(true);
  });

  it('--dry-run prints the waves, the rendered objects and the copies that cannot be rendered, storing nothing', async () => {
    const result = await hub(['hub', 'rollout', 'apply', '-f', rolloutFile('dry'), '--dry-run']);
    expect(result.exitCode, printedBy(result)).toBe(0);
    expect(result.stdout).toContain('Dry run: rollout dry would be created as revision 1; nothing was changed.');
    expect(result.stdout).toContain('Wave 1 (1): store-1\nWave 2 (2): store-2, store-3');
    expect(result.stdout).toContain('store-2: spec.resources[0].data.site: the cluster has no label "region"');
    expect(result.stdout).toContain(
      '# cluster store-1, copy revision 1-abc\n---\nkind: ConfigMap\nmetadata:\n  name: site',
    );
    expect(result.stdout).toContain('# cluster store-3, copy revision 1-def: objects not shown (answer size bound)');
    expect(fake.rollouts.has('dry')).toBe(false);
    const json = JSON.parse(
      (await hub(['hub', 'rollout', 'apply', '-f', rolloutFile('dry'), '--dry-run', '--json'])).stdout,
    ) as ApplyResult;
    expect(json.dryRun).toEqual(fake.dryRunPlan);
  });

  it('refuses a bad document naming the field, before any connection to the hub', async () => {
    const before = fake.connections();
    const path = rolloutFile('bad', { strategy: { waves: [1, '150%'] } });
    const result = await hub(['hub', 'rollout', 'apply', '-f', path]);
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('Rollout spec.strategy.waves[1]: a percentage is at most 100%');
    const missing = await hub(['hub', 'rollout', 'apply', '-f', join(dir, 'nothing-here.yaml'), '--json']);
    expect(missing.exitCode).toBe(3);
    expect((JSON.parse(missing.stdout) as { error: { code: string } }).error.code).toBe('E_ROLLOUT_FILE');
    expect(fake.connections()).toBe(before);
  });

  it('shows in --help a complete Rollout file that reads and checks', async () => {
    const example = (HubRolloutApply.examples as string[]).find((e) => e.includes('kind: Rollout')) as string;
    const exampleDir = mkdtempSync(join(tmpdir(), 'help-example-'));
    mkdirSync(join(exampleDir, 'manifests'));
    writeFileSync(join(exampleDir, 'rollout.yaml'), example.split('\n').slice(1).join('\n'));
    const loaded = await readRolloutFile({ path: join(exampleDir, 'rollout.yaml') });
    expect(loaded.spec.strategy.failureBudget).toEqual({ count: 2 });
    const help = await runCli(['hub', 'rollout', 'apply', '--help']);
    expect(help.stdout).toContain('      clusterSelector: env=prod');
  });
});

describe('edgeadm hub rollout status', () => {
  it('prints the waves with counts per state, the summaries and the cluster rows; --json is the view', async () => {
    await hub(['hub', 'rollout', 'apply', '-f', rolloutFile('shown')]);
    fake.setStatus('shown', progressingStatus());
    const table = await hub(['hub', 'rollout', 'status', 'shown', '--clusters']);
    expect(table.exitCode, printedBy(table)).toBe(0);
    const lines = table.stdout.split('\n');
    expect(lines[0]).toBe('Rollout shown: revision 1, progressing');
    const header = lines.find((line) => line.startsWith('WAVE')) as string;
    expect(header.split(/\s+/)).toEqual([
      'WAVE',
      'CLUSTERS',
      'STATE',
      'WAITING',
      'HELD',
      'OFFLINE-PENDING',
      'APPLYING',
      'PROGRESSING',
      'READY',
      'FAILED',
    ]);
    expect(lines.find((line) => line.startsWith('2 '))?.split(/\s+/)).toEqual([
      '2',
      '3',
      'started',
      '0',
      '1',
      '0',
      '0',
      '1',
      '1',
      '0',
    ]);
    expect(lines.find((line) => line.startsWith('all '))?.split(/\s+/)).toEqual([
      'all',
      '4',
      'progressing',
      '0',
      '1',
      '0',
      '0',
      '1',
      '2',
      '0',
    ]);
    expect(lines.find((line) => line.startsWith('min-available'))?.split(/\s+/)).toEqual(['min-available', '2', '3']);
    // CLUSTER, WAVE, PHASE, COPY REVISION, LAST SEEN (connected, or never seen: "-"), MESSAGE.
    expect(lines.find((line) => line.startsWith('CLUSTER'))?.split(/\s{2,}/)).toEqual([
      'CLUSTER',
      'WAVE',
      'PHASE',
      'COPY REVISION',
      'LAST SEEN',
      'MESSAGE',
    ]);
    expect(lines.find((line) => line.startsWith('store-2'))?.split(/\s{2,}/)).toEqual([
      'store-2',
      '2',
      'held',
      '-',
      '-',
      'opening hours',
    ]);

    const json = await hub(['hub', 'rollout', 'status', 'shown', '--clusters', '--json']);
    expect(JSON.parse(json.stdout)).toEqual(fake.rollouts.get('shown')?.view);
  });

  it('--watch exits 0 when the rollout completes, 5 when it halts, 6 when it is aborted', async () => {
    for (const [state, exitCode] of [
      ['complete', 0],
      ['halted', 5],
      ['aborted', 6],
    ] as const) {
      const name = `watch-${state}`;
      await hub(['hub', 'rollout', 'apply', '-f', rolloutFile(name)]);
      const watching = hub(['hub', 'rollout', 'status', name, '--watch']);
      await waitForLongPoll(name);
      fake.setStatus(name, { state, ...(state === 'halted' && { haltReason: '3 clusters failed' }) });
      const result = await watching;
      expect(result.exitCode, `${state}: ${result.stderr}`).toBe(exitCode);
      // Not a terminal: one timestamped line per change.
      expect(result.stdout).toMatch(new RegExp(`^\\S+Z ${name} {2}revision 1 {2}progressing`));
      expect(result.stdout).toMatch(new RegExp(`\\S+Z ${name} {2}revision 1 {2}${state}`));
      if (state === 'halted') expect(result.stderr).toContain(`rollout ${name} halted: 3 clusters failed`);
    }
  });

  it('--watch exits 7 when the rollout is done wherever reachable, naming how many offline clusters wait (issue #30)', async () => {
    await hub(['hub', 'rollout', 'apply', '-f', rolloutFile('watch-offline')]);
    const watching = hub(['hub', 'rollout', 'status', 'watch-offline', '--watch']);
    await waitForLongPoll('watch-offline');
    const counts = { ...zeroCounts(), ready: 3, held: 1, 'offline-pending': 2 };
    fake.setStatus('watch-offline', {
      currentWave: 1,
      counts,
      waves: [
        { index: 0, clusters: 1, counts: { ...zeroCounts(), ready: 1 }, state: 'done' },
        { index: 1, clusters: 5, counts: { ...counts, ready: 2 }, state: 'soaking' },
      ],
    });
    const result = await watching;
    expect(result.exitCode, result.stderr).toBe(7);
    expect(result.stderr).toContain(
      'rollout watch-offline is done wherever reachable; 2 clusters pending (offline), sent the revision when they return',
    );
  });

  it('--watch --timeout ends a watch of a rollout that still moves with exit 8', async () => {
    await hub(['hub', 'rollout', 'apply', '-f', rolloutFile('watch-timeout')]);
    const result = await hub(['hub', 'rollout', 'status', 'watch-timeout', '--watch', '--timeout', '1s']);
    expect(result.exitCode, result.stderr).toBe(8);
    expect(result.stderr).toContain('rollout watch-timeout is still progressing after 1s');
    const bad = await hub(['hub', 'rollout', 'status', 'watch-timeout', '--watch', '--timeout', 'soon']);
    expect(bad.exitCode).toBe(3);
  });

  it('--watch --json prints one document, the last view, also when it halts', async () => {
    await hub(['hub', 'rollout', 'apply', '-f', rolloutFile('watch-json')]);
    const watching = hub(['hub', 'rollout', 'status', 'watch-json', '--watch', '--json']);
    await waitForLongPoll('watch-json');
    fake.setStatus('watch-json', { state: 'halted', haltReason: 'budget' });
    const result = await watching;
    expect(result.exitCode).toBe(5);
    expect(JSON.parse(result.stdout)).toMatchObject({ name: 'watch-json', state: 'halted', haltReason: 'budget' });
  });
});

describe('edgeadm hub rollout list, get and the actions', () => {
  it('lists, prints the stored document as YAML or JSON, pauses, resumes, undoes, aborts and deletes', async () => {
    await hub(['hub', 'rollout', 'apply', '-f', rolloutFile('acts')]);
    const list = await hub(['hub', 'rollout', 'list']);
    expect(list.stdout.split('\n')[0]?.split(/\s+/)).toEqual([
      'NAME',
      'REVISION',
      'STATE',
      'OWNER',
      'CLUSTERS',
      'READY',
      'FAILED',
      'UPDATED',
    ]);
    expect(list.stdout).toMatch(/^acts\s+1\s+progressing\s+admin/m);
    const yaml = await hub(['hub', 'rollout', 'get', 'acts']);
    expect(load(yaml.stdout)).toEqual(fake.rollouts.get('acts')?.document);
    expect(yaml.stdout.startsWith('# revision 1\n')).toBe(true);
    const json = await hub(['hub', 'rollout', 'get', 'acts', '-o', 'json']);
    expect(JSON.parse(json.stdout)).toEqual(fake.rollouts.get('acts')?.document);
    expect((await hub(['hub', 'rollout', 'pause', 'acts'])).stdout).toMatch(/^acts {2}revision 1 {2}paused/);
    expect((await hub(['hub', 'rollout', 'resume', 'acts'])).stdout).toMatch(/progressing/);
    const noPrevious = await hub(['hub', 'rollout', 'undo', 'acts']);
    expect(noPrevious.exitCode).toBe(1);
    expect(noPrevious.stderr).toContain('there is no previous revision');
    expect((await hub(['hub', 'rollout', 'abort', 'acts', '--json'])).stdout).toContain('"state": "aborted"');
    const deleted = await hub(['hub', 'rollout', 'delete', 'acts']);
    expect(deleted.stdout).toBe(
      'rollout acts deleted: its objects were removed from 1 cluster\noffline now, their objects are removed when they return (1 cluster): store-2\n',
    );
  });
});

describe('edgeadm hub clusters hold, release, set-properties', () => {
  it('holds with a reason, releases, and sets KEY=VALUE properties', async () => {
    const held = await hub(['hub', 'clusters', 'hold', 'store-9', '--reason', 'opening hours']);
    expect(held.stdout).toBe('cluster store-9 held: opening hours\n');
    expect(fake.holds.get('store-9')?.reason).toBe('opening hours');
    await hub(['hub', 'clusters', 'release', 'store-9']);
    expect(fake.holds.has('store-9')).toBe(false);
    const set = await hub(['hub', 'clusters', 'set-properties', 'store-9', 'tag=1.4.3', 'note=a=b', 'empty=']);
    expect(set.exitCode, printedBy(set)).toBe(0);
    expect(fake.properties.get('store-9')).toEqual({ tag: '1.4.3', note: 'a=b', empty: '' });
    const bad = await hub(['hub', 'clusters', 'set-properties', 'store-9', 'tag']);
    expect(bad.exitCode).toBe(3);
    expect(bad.stderr).toContain('"tag" is not KEY=VALUE');
  });
});

/** Waits until the fake has seen a long poll for `name` (the watch is past its first view). */
async function waitForLongPoll(name: string): Promise<void> {
  while (!fake.requests.some((r) => r.path.startsWith(`/hub/v1/rollouts/${name}?waitForChangeFrom=`))) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
