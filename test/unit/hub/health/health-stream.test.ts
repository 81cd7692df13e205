/**
 * The hub's end of the health stream over a real tunnel (edgeadm's real
 * `acceptTunnel`), against a stand-in agent that writes what a hostile or
 * broken agent would: a line past the limit, lines that are not JSON or
 * not reports, between good ones. Only the good ones reach the book; a
 * stream the agent ends is opened again; an agent without the stream is
 * not asked again.
 */
import type { ServerHttp2Stream } from 'node:http2';
import { afterEach, describe, expect, it } from 'vitest';
import { followHealth, type HealthSink } from '../../../../src/hub/health/health-stream.js';
import { HEALTH_PATH, MAX_HEALTH_LINE_BYTES, type ClusterHealthReport } from '../../../../src/health/wire.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import type { HubTunnel } from '../../../../src/tunnel/hub-tunnel.js';
import { connectStandInPair } from '../../../support/rollout-agent-stand-in.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

/** A hub end and a stand-in agent whose health stream `serve` answers; every opening is counted. */
async function connect(serve: (stream: ServerHttp2Stream, opening: number) => void): Promise<HubTunnel> {
  let openings = 0;
  const pair = await connectStandInPair({
    onControl: (path, stream) => {
      if (path !== HEALTH_PATH) return false;
      openings += 1;
      serve(stream, openings);
      return true;
    },
  });
  cleanups.push(pair.close);
  return pair.tunnel;
}

const good = (ready: number): ClusterHealthReport => ({ nodes: { total: 2, ready, notReady: [] }, certificates: [] });

/** A sink that records what it takes and wakes whoever waits for a count. */
function recordingSink(): HealthSink & { taken: ClusterHealthReport[]; waitFor(count: number): Promise<void> } {
  const taken: ClusterHealthReport[] = [];
  const waiters: (() => void)[] = [];
  return {
    taken,
    waitFor: async (count) => {
      while (taken.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    },
    take: async (_cluster, report) => {
      taken.push(report);
      for (const wake of waiters.splice(0)) wake();
    },
  };
}

describe('followHealth', () => {
  it('takes only the good lines of a stream that also carries a huge line, non-JSON and a lie', async () => {
    const sink = recordingSink();
    const tunnel = await connect((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/x-ndjson' });
      stream.write(`${JSON.stringify(good(2))}\n`);
      stream.write(`{"certificates":[],"kubernetesVersion":"${'v'.repeat(MAX_HEALTH_LINE_BYTES)}"}\n`);
      stream.write('this is not JSON\n');
      stream.write(`${JSON.stringify({ nodes: { total: 1, ready: 5, notReady: [] }, certificates: [] })}\n`);
      stream.write(`${JSON.stringify(['an', 'array'])}\n`);
      stream.write(`${JSON.stringify(good(1))}\n`);
    });
    followHealth(tunnel, sink, silentLogger, { reopenMs: 10, reopenMaxMs: 10 });
    await sink.waitFor(2);
    expect(sink.taken).toEqual([good(2), good(1)]);
  });

  it('opens the stream again when the agent ends it, and reads the new one', async () => {
    const sink = recordingSink();
    const tunnel = await connect((stream, opening) => {
      stream.respond({ ':status': 200, 'content-type': 'application/x-ndjson' });
      stream.end(`${JSON.stringify(good(opening))}\n`);
    });
    followHealth(tunnel, sink, silentLogger, { reopenMs: 10, reopenMaxMs: 10 });
    await sink.waitFor(2);
    expect(sink.taken.slice(0, 2)).toEqual([good(1), good(2)]);
  });

  it('does not ask again an agent that has no health stream', async () => {
    let openings = 0;
    const tunnel = await connect((stream, opening) => {
      openings = opening;
      stream.respond({ ':status': 404 }, { endStream: true });
    });
    const stop = followHealth(tunnel, recordingSink(), silentLogger, { reopenMs: 1, reopenMaxMs: 1 });
    // Other control streams still work on the tunnel meanwhile; a second opening would have come within 1 ms.
    await new Promise((resolve) => setTimeout(resolve, 200));
    stop();
    expect(openings).toBe(1);
  });
});
