/**
 * A non-leading replica's reports on their way to the leader (peer-rollouts.ts
 * ReportForwarder), with the leader played by the test: it answers each
 * batch when the test says so, or fails it.
 */
import { describe, expect, it } from 'vitest';
import type { ReplicaCoordination, ReplicaInfo } from '../../../../src/hub/store/coordination.js';
import type { PeerCredentials } from '../../../../src/hub/replicas/peer-link.js';
import { ReportForwarder } from '../../../../src/hub/rollouts/report-forwarder.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import type { ReportMessage } from '../../../../src/rollout/wire.js';

const LEADER: ReplicaInfo = { id: 'leader', peerUrl: 'https://127.0.0.1:1', advertiseUrl: '', startedAt: '' };

interface Batch {
  lines: string[];
  answer: (status: number) => void;
  fail: (error: Error) => void;
}

/** A forwarder whose leader is the test: every batch waits in `batches` for an answer. */
function forwarder(options: { leader?: () => ReplicaInfo | undefined; maxQueuedBytes?: number } = {}) {
  const batches: Batch[] = [];
  let arrived: (() => void) | undefined;
  const coordination = {
    self: { ...LEADER, id: 'self' },
    leaderOf: () => Promise.resolve(options.leader === undefined ? LEADER : options.leader()),
  } as unknown as ReplicaCoordination;
  const sent = new ReportForwarder({
    coordination,
    credentials: {} as PeerCredentials,
    logger: silentLogger,
    retryMs: 1,
    retryMaxMs: 1,
    ...(options.maxQueuedBytes === undefined ? {} : { maxQueuedBytes: options.maxQueuedBytes }),
    post: (_leader, body) =>
      new Promise((resolve, reject) => {
        const { reports } = body as { reports: { cluster: string; report: ReportMessage }[] };
        batches.push({
          lines: reports.map(({ cluster, report }) => `${cluster}/${report.rollout}/${report.message ?? ''}`),
          answer: (status) => resolve({ status, body: '{}' }),
          fail: reject,
        });
        arrived?.();
      }),
  });
  /** The next batch the leader is sent. */
  const next = async (): Promise<Batch> => {
    while (batches.length === 0) await new Promise<void>((resolve) => (arrived = resolve));
    return batches.shift()!;
  };
  return { sent, next };
}

function line(cluster: string, rollout: string, message: string): ReportMessage {
  return { kind: 'removed', rollout, cluster, message };
}

/** Whether a promise has settled, and how, without waiting for it. */
async function stateOf(promise: Promise<unknown>): Promise<'pending' | 'resolved' | 'rejected'> {
  const marker = Symbol('pending');
  try {
    return (await Promise.race([promise, Promise.resolve(marker)])) === marker ? 'pending' : 'resolved';
  } catch {
    return 'rejected';
  }
}

describe('ReportForwarder', () => {
  it('settles a report only when the leader took it, the latest of a cluster and rollout answering for the older', async () => {
    const { sent, next } = forwarder();
    const first = sent.forward('a', line('a', 'web', 'v1'));
    const inFlight = await next();
    expect(inFlight.lines).toEqual(['a/web/v1']);
    const second = sent.forward('a', line('a', 'web', 'v2'));
    const third = sent.forward('a', line('a', 'web', 'v3'));
    const other = sent.forward('b', line('b', 'web', 'v1'));
    expect(await stateOf(first)).toBe('pending');
    inFlight.answer(200);
    await first;
    // v2 was replaced by v3 while it waited: one line for it, which answers for both.
    const following = await next();
    expect(following.lines).toEqual(['a/web/v3', 'b/web/v1']);
    expect(await stateOf(second)).toBe('pending');
    following.answer(200);
    await Promise.all([second, third, other]);
  });

  it('sends a batch the leader did not take again, before what was queued since, and keeps it pending meanwhile', async () => {
    const { sent, next } = forwarder();
    const a = sent.forward('a', line('a', 'web', 'v1'));
    const refused = await next();
    const b = sent.forward('b', line('b', 'web', 'v1'));
    refused.answer(503);
    expect(await stateOf(a)).toBe('pending');
    const again = await next();
    expect(again.lines).toEqual(['a/web/v1', 'b/web/v1']);
    again.fail(new Error('connection refused: the leader died'));
    const third = await next();
    expect(third.lines).toEqual(['a/web/v1', 'b/web/v1']);
    third.answer(200);
    await Promise.all([a, b]);
  });

  it('waits while no replica leads, then sends to the one that does', async () => {
    const election = {
      leader: undefined as ReplicaInfo | undefined,
      asked: 0,
      askedTwice: Promise.withResolvers<void>(),
    };
    const { sent, next } = forwarder({
      leader: () => {
        election.asked += 1;
        if (election.asked === 2) election.askedTwice.resolve();
        return election.leader;
      },
    });
    const a = sent.forward('a', line('a', 'web', 'v1'));
    // Asked, found none, and asked again after its delay.
    await election.askedTwice.promise;
    expect(await stateOf(a)).toBe('pending');
    election.leader = LEADER;
    (await next()).answer(200);
    await a;
  });

  it('gives up the reports of a cluster whose tunnel closed, and refuses past its bound, so the agent sends them again', async () => {
    const { sent, next } = forwarder({ maxQueuedBytes: 200 });
    const inFlight = sent.forward('a', line('a', 'web', 'v1'));
    const held = await next();
    const queued = sent.forward('b', line('b', 'web', 'v1'));
    sent.dropCluster('b');
    expect(await stateOf(queued)).toBe('rejected');
    const big = sent.forward('c', line('c', 'web', 'x'.repeat(300)));
    expect(await stateOf(big)).toBe('rejected');
    held.answer(200);
    await inFlight;
    sent.stop();
    expect(await stateOf(sent.forward('d', line('d', 'web', 'v1')))).toBe('rejected');
  });
});
