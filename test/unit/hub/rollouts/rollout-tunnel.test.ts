/**
 * Rollouts over a real tunnel, hub end: edgeadm's real `acceptTunnel` on
 * loopback TLS, the real controller and store, and a stand-in for the
 * agent's end (test/support/rollout-agent-stand-in.ts) that answers the
 * control paths of src/rollout/wire.ts the way the contract says. It proves copies go out, reports come in, bad
 * report lines are dropped without harm, and an agent without rollouts is
 * shown as such. Waits are on events (the status version), never on time.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RolloutController } from '../../../../src/hub/rollouts/rollout-controller.js';
import { type RolloutActor } from '../../../../src/hub/rollouts/rollout-permissions.js';
import { TunnelRolloutDelivery } from '../../../../src/hub/rollouts/rollout-tunnel.js';
import { followReports, type ReportTimers } from '../../../../src/hub/rollouts/report-stream.js';
import { LineSplitter, reportOf } from '../../../../src/hub/rollouts/report-lines.js';
import { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import { silentLogger, type Logger } from '../../../../src/log/run-log.js';
import { parseRollout } from '../../../../src/rollout/spec.js';
import {
  ROLLOUT_REPORT_ACKS_HEADER,
  ROLLOUT_REPORTS_PATH,
  type CopyMessage,
  type ReportMessage,
} from '../../../../src/rollout/wire.js';
import type { HubTunnel } from '../../../../src/tunnel/hub-tunnel.js';
import { GROUPS_HEADER, USER_HEADER } from '../../../../src/tunnel/protocol.js';
import { connectStandInPair, type RolloutStandIn, type StandInKind } from '../../../support/rollout-agent-stand-in.js';
import { rolloutDocument } from '../../rollout/fixtures.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A hub end (real acceptTunnel) and the agent stand-in, connected; returns the accepted tunnel. */
async function connectPair(options: {
  kind: StandInKind;
  refuseReports?: Array<'503' | 'reset'>;
}): Promise<{ tunnel: HubTunnel; agent: RolloutStandIn }> {
  const pair = await connectStandInPair(options);
  cleanups.push(pair.close);
  return pair;
}

const owner: RolloutActor = { user: 'alice', groups: ['ops', 'shops'], clustersSelector: '', isAdmin: true };

async function hubFor(tunnel: HubTunnel, logger: Logger = silentLogger) {
  const store = await SqliteHubStore.open(':memory:');
  await store.addCluster({
    name: 'c1',
    labels: { env: 'prod', region: 'eu' },
    certSerial: '01',
    certNotAfter: '2030-01-01T00:00:00.000Z',
    registeredAt: '2026-01-01T00:00:00.000Z',
  });
  const delivery = new TunnelRolloutDelivery({ tunnels: new Map([['c1', tunnel]]), logger });
  const controller = await RolloutController.start({ store, delivery, logger, passIntervalMs: 0 });
  cleanups.push(async () => {
    await controller.stop();
    await store.close();
  });
  followReports(
    tunnel,
    { report: controller.report.bind(controller), unsupported: (cluster) => delivery.markUnsupported(cluster) },
    logger,
  );
  controller.clusterConnected('c1');
  return { store, controller };
}

/** Waits, by status versions, until `done` holds for the rollout's status. */
async function until(
  controller: RolloutController,
  done: (view: ReturnType<RolloutController['status']>) => boolean,
): Promise<ReturnType<RolloutController['status']>> {
  for (;;) {
    const view = controller.status('web', owner, true);
    if (done(view)) return view;
    await controller.waitForChange('web', view.statusVersion, 60_000);
  }
}

const document = rolloutDocument({
  strategy: { waves: ['100%'], soakSeconds: 0 },
  status: { summaries: [{ name: 'available', reduce: 'sum', field: '.status.availableReplicas' }] },
});

describe('rollouts over a real tunnel', () => {
  it('sends the copy as the owner on a control stream and takes the agent’s reports; bad lines are dropped', async () => {
    const { tunnel, agent } = await connectPair({ kind: 'rollouts' });
    const warnings: string[] = [];
    const logger: Logger = { ...silentLogger, warn: (message) => warnings.push(message) };
    const { controller } = await hubFor(tunnel, logger);
    await agent.reportsOpened;
    await controller.apply(document, parseRollout(document), owner);
    await controller.settled();
    expect(agent.copies).toHaveLength(1);
    const copy = agent.copies[0] as CopyMessage;
    expect(copy.owner).toEqual({ user: 'alice', groups: ['ops', 'shops'] });
    expect(copy.copy.objects.find((object) => object.kind === 'ConfigMap')?.['data']).toMatchObject({ site: 'c1' });
    // Control streams carry no identity: no user's stream can look like one, nor one like a user's.
    for (const headers of agent.controlHeaders) {
      expect(headers[USER_HEADER]).toBeUndefined();
      expect(headers[GROUPS_HEADER]).toBeUndefined();
    }

    const good = {
      kind: 'copy',
      rollout: 'web',
      cluster: 'c1',
      revision: copy.copy.revision,
      readiness: 'ready',
      objects: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', status: { availableReplicas: 4 } }],
    };
    agent.writeRaw('not json\n');
    agent.writeRaw(`${JSON.stringify({ ...good, cluster: 'c2' })}\n`);
    agent.writeRaw(`${JSON.stringify({ kind: 'copy', rollout: 'web' })}\n`);
    agent.writeRaw(`{"padding":"${'x'.repeat(5 * 1024 * 1024)}"}\n`);
    // One good line, split across writes.
    const line = `${JSON.stringify(good)}\n`;
    agent.writeRaw(line.slice(0, 10));
    agent.writeRaw(line.slice(10));
    const view = await until(controller, (status) => status.counts.ready === 1);
    expect(view.summaries).toEqual([{ name: 'available', value: 4, reporting: 1 }]);
    expect(warnings).toEqual([
      expect.stringContaining('not JSON'),
      expect.stringContaining('names cluster "c2"'),
      expect.stringContaining('rollout or cluster is missing'),
      expect.stringContaining('longer than'),
    ]);
    expect(tunnel.isOpen).toBe(true);

    const deleted = await controller.delete('web', owner);
    expect(deleted).toEqual({ name: 'web', removed: ['c1'], pendingRemovals: [] });
    expect(agent.removals).toEqual([{ rollout: 'web', owner: { user: 'alice', groups: ['ops', 'shops'] } }]);
  });

  it('opens a report stream that was refused or broken again, waiting longer after each failure, and reads it then', async () => {
    // What an agent does while it starts (503 before its welcome is handled) or when a stream breaks.
    const { tunnel, agent } = await connectPair({ kind: 'rollouts', refuseReports: ['503', 'reset', '503'] });
    const delays: number[] = [];
    const timers: ReportTimers = {
      setTimeout: (callback, ms) => {
        delays.push(ms);
        return setImmediate(callback);
      },
      clearTimeout: (handle) => clearImmediate(handle as NodeJS.Immediate),
    };
    const reports: ReportMessage[] = [];
    followReports(
      tunnel,
      {
        report: (_cluster, message) => {
          reports.push(message);
        },
        unsupported: () => {},
      },
      silentLogger,
      { reopenMs: 1_000, reopenMaxMs: 3_000, timers },
    );
    await agent.waitForReportOpens(4);
    await agent.reportsOpened;
    expect(delays).toEqual([1_000, 2_000, 3_000]);
    const line: ReportMessage = { kind: 'removed', rollout: 'web', cluster: 'c1' };
    agent.report(line);
    await vi.waitUntil(() => reports.length > 0, { timeout: 60_000 });
    expect(reports).toEqual([line]);
    // A served stream that the agent ends (as it does for a newer one) is opened again after the first delay.
    agent.endReports();
    await agent.waitForReportOpens(5);
    expect(delays).toEqual([1_000, 2_000, 3_000, 1_000]);
  });

  it('acknowledges a line only once the sink took it for good, never past one not taken yet', async () => {
    const { tunnel, agent } = await connectPair({ kind: 'rollouts' });
    const pending = new Map<string, PromiseWithResolvers<void>>();
    followReports(
      tunnel,
      {
        report: (_cluster, message) => {
          const taken = Promise.withResolvers<void>();
          pending.set(message.rollout, taken);
          return taken.promise;
        },
        unsupported: () => {},
      },
      silentLogger,
    );
    await agent.reportsOpened;
    agent.report({ kind: 'removed', rollout: 'web', cluster: 'c1', seq: 1 });
    agent.report({ kind: 'removed', rollout: 'db', cluster: 'c1', seq: 2 });
    await vi.waitUntil(() => pending.size === 2, { timeout: 60_000 });
    // The later line is written first: nothing may be acknowledged while the earlier one is not.
    pending.get('db')!.resolve();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(agent.acks).toEqual([]);
    pending.get('web')!.resolve();
    await agent.waitForAck(2);
    expect(agent.acks).toEqual([2]);
  });

  it('starts the report stream over when a line is not taken, so that the agent sends its reports again', async () => {
    const { tunnel, agent } = await connectPair({ kind: 'rollouts' });
    const delays: number[] = [];
    const timers: ReportTimers = {
      setTimeout: (callback, ms) => {
        delays.push(ms);
        return setTimeout(callback, 0);
      },
      clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
    };
    followReports(
      tunnel,
      {
        report: () => Promise.reject(new Error('the leader died before writing it')),
        unsupported: () => {},
      },
      silentLogger,
      { reopenMs: 1_000, reopenMaxMs: 8_000, timers },
    );
    await agent.reportsOpened;
    agent.report({ kind: 'removed', rollout: 'web', cluster: 'c1', seq: 1 });
    await agent.waitForReportOpens(2);
    agent.report({ kind: 'removed', rollout: 'web', cluster: 'c1', seq: 1 });
    await agent.waitForReportOpens(3);
    expect(agent.acks).toEqual([]);
    // Waited as after failures (the delay doubles), not as after streams served to their end.
    expect(delays.slice(0, 2)).toEqual([1_000, 2_000]);
  });

  it('acknowledges the report lines it takes, as the last line number seen', async () => {
    const { tunnel, agent } = await connectPair({ kind: 'rollouts' });
    const reports: ReportMessage[] = [];
    followReports(
      tunnel,
      {
        report: (_cluster, message) => {
          reports.push(message);
        },
        unsupported: () => {},
      },
      silentLogger,
    );
    await agent.reportsOpened;
    expect(agent.controlHeaders.at(-1)?.[ROLLOUT_REPORT_ACKS_HEADER]).toBe('1');
    agent.report({ kind: 'removed', rollout: 'web', cluster: 'c1', seq: 1 });
    agent.report({ kind: 'removed', rollout: 'db', cluster: 'c1', seq: 2 });
    await agent.waitForAck(2);
    expect(reports.map((report) => report.rollout)).toEqual(['web', 'db']);
    expect(agent.acks.at(-1)).toBe(2);
  });

  it('asks an agent that does not serve rollouts no more on that tunnel', async () => {
    const { tunnel, agent } = await connectPair({ kind: 'unknown-path-404' });
    const delays: number[] = [];
    let unsupported = 0;
    const stop = followReports(tunnel, { report: () => {}, unsupported: () => (unsupported += 1) }, silentLogger, {
      timers: { setTimeout: (_callback, ms) => delays.push(ms), clearTimeout: () => {} },
    });
    await vi.waitUntil(() => unsupported === 1, { timeout: 60_000 });
    stop();
    expect(agent.controlHeaders.filter((headers) => headers[':path'] === ROLLOUT_REPORTS_PATH)).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it.each(['unknown-path-404', 'before-rollouts-400'] as const)(
    'shows a cluster whose agent does not serve rollouts (%s) as failed with a clear message, and keeps going',
    async (kind) => {
      const { tunnel } = await connectPair({ kind });
      const { controller } = await hubFor(tunnel);
      await controller.apply(document, parseRollout(document), owner);
      const view = await until(controller, (status) => status.counts.failed === 1);
      expect(view.clusters?.[0]).toMatchObject({
        cluster: 'c1',
        phase: 'failed',
        message: expect.stringContaining('does not serve rollouts'),
      });
      expect(tunnel.isOpen).toBe(true);
    },
  );
});

describe('report lines', () => {
  it('splits lines across chunks and drops a line past the bound whole, going on at the next newline', () => {
    let dropped = 0;
    const splitter = new LineSplitter(8, () => (dropped += 1));
    expect(splitter.push(Buffer.from('ab'))).toEqual([]);
    expect(splitter.push(Buffer.from('c\n0123'))).toEqual(['abc']);
    expect(splitter.push(Buffer.from('456789'))).toEqual([]);
    expect(splitter.push(Buffer.from('more\nok\n'))).toEqual(['ok']);
    expect(dropped).toBe(1);
  });

  it('never holds more than its bound and gives back every short line whatever the chunking', () => {
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[a-z]{0,20}$/), { maxLength: 20 }),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 10 }),
        (lines, cuts) => {
          const bytes = Buffer.from(lines.map((line) => `${line}\n`).join(''));
          const splitter = new LineSplitter(10, () => {});
          const out: string[] = [];
          let at = 0;
          for (let i = 0; at < bytes.length; i += 1) {
            const size = cuts[i % cuts.length] as number;
            out.push(...splitter.push(bytes.subarray(at, at + size)));
            at += size;
          }
          expect(out).toEqual(lines.filter((line) => line.length <= 10));
        },
      ),
    );
  });

  it('turns any JSON into a report or a reason, never a throw', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const result = reportOf(value);
        expect(typeof result === 'string' || result.kind === 'copy' || result.kind === 'removed').toBe(true);
      }),
    );
  });

  it('checks what a line holds before it is a report', () => {
    expect(reportOf({ kind: 'removed', rollout: 'web', cluster: 'c1' })).toEqual({
      kind: 'removed',
      rollout: 'web',
      cluster: 'c1',
    });
    expect(
      reportOf({ kind: 'copy', rollout: 'w', cluster: 'c', revision: '1-a', readiness: 'done', objects: [] }),
    ).toBe('readiness is not known');
    expect(
      reportOf({
        kind: 'copy',
        rollout: 'w',
        cluster: 'c',
        revision: '1-a',
        readiness: 'ready',
        objects: [{ kind: 1 }],
      }),
    ).toBe('an object lacks apiVersion, kind or name');
    expect(reportOf([1])).toBe('not a JSON object');
  });
});
