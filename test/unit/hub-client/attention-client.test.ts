/**
 * `HubClient.listAttention` against a scripted HTTPS server standing in for
 * the hub's `GET /hub/v1/attention`: it asks what the request says (and
 * leaves the rest to the hub's defaults), reads the list page by page to
 * its total, lists a cluster that moved across a page boundary once, and
 * stops when a page comes back empty.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HubClient } from '../../../src/hub-client/hub-client.js';
import { ATTENTION_PAGE_SIZE } from '../../../src/hub-client/limits.js';
import type { AttentionPage, AttentionRow } from '../../../src/hub/contract/attention.js';
import {
  createCa,
  issueCertificate,
  type CertificateAuthority,
  type CertificateAndKey,
} from '../../../src/trust/pki.js';
import { startScriptedHttpsServer, type ScriptedHttpsServer } from '../../support/scripted-https-server.js';

let ca: CertificateAuthority;
let serving: CertificateAndKey;
let server: ScriptedHttpsServer | undefined;

beforeAll(async () => {
  ca = await createCa({ commonName: 'hub-ca' });
  serving = await issueCertificate({ ca, commonName: 'hub', ipAddresses: ['127.0.0.1'], usages: ['server'] });
});

afterEach(async () => {
  await server?.close();
  server = undefined;
});

function row(name: string): AttentionRow {
  return {
    cluster: {
      name,
      labels: {},
      state: 'Disconnected',
      registeredAt: '2026-01-01T00:00:00.000Z',
      certNotAfter: '2027-01-01T00:00:00.000Z',
    },
    reasons: [{ kind: 'offline', since: '2026-01-01T00:00:00.000Z', isNeverConnected: true }],
  };
}

function page(all: readonly AttentionRow[], offset: number, limit: number): AttentionPage {
  return {
    total: all.length,
    offset,
    limit,
    rows: all.slice(offset, offset + limit),
    counts: { offline: all.length, 'rollout-halted': 0, 'nodes-not-ready': 0, 'certificate-expiring': 0, held: 0 },
    haltedRollouts: [],
    isRolloutStateKnown: true,
    offlineForSeconds: 0,
    certsWithinDays: 30,
    now: '2026-06-01T12:00:00.000Z',
  };
}

/** A hub whose list is `lists[i]` at its i-th request (the last one after that). */
async function hubServing(lists: readonly (readonly AttentionRow[])[]): Promise<HubClient> {
  server = await startScriptedHttpsServer({
    certificates: [serving],
    answer: (request, index) => {
      const params = new URL(request.path, 'https://hub.invalid').searchParams;
      const all = lists[Math.min(index, lists.length - 1)] ?? [];
      const body = page(all, Number(params.get('offset')), Number(params.get('limit')));
      return { status: 200, body: JSON.stringify(body) };
    },
  });
  return new HubClient({
    server: `https://127.0.0.1:${server.port}`,
    caPem: ca.certPem,
    token: 'edgeadm-hub-t',
    user: 'alice',
  });
}

const names = (count: number, prefix = 'shop'): AttentionRow[] =>
  Array.from({ length: count }, (_, i) => row(`${prefix}-${String(i).padStart(4, '0')}`));

describe('HubClient.listAttention', () => {
  it('asks for what the request says, and nothing it leaves to the hub', async () => {
    const client = await hubServing([names(3)]);
    await client.listAttention({ selector: 'env=prod', reason: 'held', offlineForSeconds: 600, certsWithinDays: 7 });
    await client.listAttention();
    const asked = server?.requests.map((r) => new URL(r.path, 'https://hub.invalid')) ?? [];
    expect(asked.map((url) => url.pathname)).toEqual(['/hub/v1/attention', '/hub/v1/attention']);
    expect(Object.fromEntries(asked[0]?.searchParams ?? [])).toEqual({
      limit: String(ATTENTION_PAGE_SIZE),
      offset: '0',
      selector: 'env=prod',
      reason: 'held',
      offlineFor: '600',
      certsWithin: '7',
    });
    expect(Object.fromEntries(asked[1]?.searchParams ?? [])).toEqual({
      limit: String(ATTENTION_PAGE_SIZE),
      offset: '0',
    });
    expect(server?.requests[0]?.authorization).toBe('Bearer edgeadm-hub-t');
  });

  it('reads every page to the total, in order', async () => {
    const all = names(2 * ATTENTION_PAGE_SIZE + 50);
    const client = await hubServing([all]);
    const list = await client.listAttention();
    expect(list.rows.map((r) => r.cluster.name)).toEqual(all.map((r) => r.cluster.name));
    expect(list.total).toBe(all.length);
    expect(server?.requests.map((r) => new URL(r.path, 'https://hub.invalid').searchParams.get('offset'))).toEqual([
      '0',
      String(ATTENTION_PAGE_SIZE),
      String(2 * ATTENTION_PAGE_SIZE),
    ]);
    expect(list).not.toHaveProperty('offset');
  });

  it('lists a cluster that moved across a page boundary once', async () => {
    const before = names(ATTENTION_PAGE_SIZE + 10);
    // A new cluster sorted first pushes the last of page one onto page two.
    const after = [row('aaa-new'), ...before];
    const client = await hubServing([before, after]);
    const listed = (await client.listAttention()).rows.map((r) => r.cluster.name);
    expect(listed).toEqual(before.map((r) => r.cluster.name));
    expect(server?.requests).toHaveLength(2);
  });

  it('stops when a page comes back empty (the list shrank meanwhile)', async () => {
    const before = names(ATTENTION_PAGE_SIZE + 10);
    const client = await hubServing([before, []]);
    const listed = (await client.listAttention()).rows.map((r) => r.cluster.name);
    expect(listed).toEqual(before.slice(0, ATTENTION_PAGE_SIZE).map((r) => r.cluster.name));
    expect(server?.requests).toHaveLength(2);
  });
});
