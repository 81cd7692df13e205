/**
 * The attention list's pure core (src/hub/attention/attention.ts) alone,
 * in this process, over N cluster views that carry what agents report of
 * their health: the part of the list's cost that the hub under bench/web
 * cannot show while no agent reports health (its clusters are store rows).
 * A tenth of the clusters are disconnected, 1 % held, 2 % with a node not
 * Ready, and each reports three certificates, a few within 30 days.
 */
import type * as AttentionModule from '../../src/hub/attention/attention.js';
import type * as AttentionQueryModule from '../../src/hub/attention/attention-query.js';
import type { ClusterView } from '../../src/hub/contract/views.js';

// The built lib/ (`npm run build`), typed by its source: the sources use TypeScript that Node's type stripping refuses.
const built = (path: string): Promise<unknown> => import(new URL(`../../lib/${path}`, import.meta.url).href);
const { queryAttention } = (await built('hub/attention/attention.js')) as typeof AttentionModule;
const { parseAttentionQuery } = (await built('hub/attention/attention-query.js')) as typeof AttentionQueryModule;

const DAY = 86_400_000;

function fleet(count: number, now: number): ClusterView[] {
  const at = (offset: number): string => new Date(now + offset).toISOString();
  return Array.from({ length: count }, (_, i): ClusterView => {
    const isConnected = i % 10 !== 0;
    return {
      name: `shop-${String(i).padStart(5, '0')}`,
      labels: { env: i % 10 === 0 ? 'staging' : 'prod', region: `r${i % 6}`, size: i % 7 === 0 ? 'large' : 'small' },
      state: isConnected ? 'Connected' : 'Disconnected',
      lastSeen: isConnected ? at(0) : at(-((i * 7919) % (3 * DAY))),
      registeredAt: at(-90 * DAY),
      certNotAfter: at((5 + ((i * 7) % 25)) * DAY),
      ...(i % 100 === 0 ? { hold: { reason: 'inventory', by: 'bench', since: at(-DAY) } } : {}),
      health: {
        reportedAt: at(-5_000),
        nodes: { total: 3, ready: i % 50 === 0 ? 2 : 3, notReady: i % 50 === 0 ? [`shop-${i}-b`] : [] },
        certificates: [
          { kind: 'cluster-ca', subject: 'CN=k3s-server-ca', notAfter: at(3650 * DAY) },
          { kind: 'apiserver-serving', subject: 'CN=k3s', notAfter: at(((i * 13) % 365) * DAY) },
          { kind: 'hub-client', subject: `CN=shop-${i}`, notAfter: at(20 * DAY) },
        ],
      },
    };
  });
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;

/** p50 and p99 of `samples` computations of the first page, most severe first. */
export function measureAttentionCore(
  count: number,
  samples: number,
): { p50Ms: number; p99Ms: number; matching: number } {
  const now = Date.now();
  const clusters = fleet(count, now);
  const query = parseAttentionQuery(new URLSearchParams({ limit: '50' }));
  let matching = 0;
  const times: number[] = [];
  for (let i = 0; i <= samples; i += 1) {
    const started = performance.now();
    matching = queryAttention(clusters, [], query, now).total;
    // The first is a warm-up.
    if (i > 0) times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const round = (n: number): number => Math.round(n * 10) / 10;
  return { p50Ms: round(percentile(times, 50)), p99Ms: round(percentile(times, 99)), matching };
}
