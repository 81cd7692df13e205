/**
 * `hub certs check`'s report: soonest first, EXPIRING within the window,
 * EXPIRED past it, and an agent's certificate for the hub flagged only once
 * its online renewal is overdue.
 */
import { describe, expect, it } from 'vitest';
import { certificateReport, renderCertificateTable } from '../../../src/hub-client/certificate-report.js';
import { AGENT_CERT_RENEWAL_DAYS } from '../../../src/hub/limits.js';
import type { ClusterView } from '../../../src/hub/contract/views.js';

const NOW = new Date('2030-01-01T00:00:00.000Z');
const inDays = (days: number): string => new Date(NOW.getTime() + days * 86_400_000).toISOString();

function cluster(name: string, hubClientDays: number, reported: Array<[string, number]> = []): ClusterView {
  return {
    name,
    labels: {},
    state: 'Connected',
    registeredAt: inDays(-100),
    certNotAfter: inDays(hubClientDays),
    health: {
      reportedAt: inDays(0),
      certificates: reported.map(([kind, days]) => ({
        kind: kind as 'cluster-ca' | 'apiserver-serving',
        subject: `CN=${kind}`,
        notAfter: inDays(days),
      })),
    },
  };
}

describe('certificateReport', () => {
  it('sorts soonest first and says which need renewing', () => {
    const rows = certificateReport({
      clusters: [cluster('b', 25, [['apiserver-serving', 12]]), cluster('a', 25, [['cluster-ca', -1]])],
      now: NOW,
      withinDays: 30,
    });
    expect(rows.map((row) => [row.cluster, row.kind, row.daysLeft, row.status])).toEqual([
      ['a', 'cluster-ca', -1, 'expired'],
      ['b', 'apiserver-serving', 12, 'expiring'],
      ['a', 'hub-client', 25, 'ok'],
      ['b', 'hub-client', 25, 'ok'],
    ]);
  });

  it("flags an agent's certificate only once the renewal its agent does online is overdue", () => {
    const due = AGENT_CERT_RENEWAL_DAYS;
    const rows = certificateReport({
      clusters: [cluster('renewed', due + 1), cluster('overdue', due - 1)],
      now: NOW,
      withinDays: 30,
    });
    expect(rows.map((row) => [row.cluster, row.status])).toEqual([
      ['overdue', 'expiring'],
      ['renewed', 'ok'],
    ]);
    // A narrower window than the renewal point is the window.
    const narrow = certificateReport({ clusters: [cluster('overdue', due - 1)], now: NOW, withinDays: 1 });
    expect(narrow[0]?.status).toBe('ok');
  });

  it('renders a table a person reads, the hub as (hub)', () => {
    const table = renderCertificateTable(
      certificateReport({ clusters: [cluster('shop-1', 2)], now: NOW, withinDays: 30 }),
    );
    expect(table.split('\n')).toEqual([
      'CLUSTER  CERTIFICATE  EXPIRES     DAYS LEFT  STATUS    SUBJECT',
      `shop-1   hub-client   ${inDays(2).slice(0, 10)}  2          EXPIRING  -`,
    ]);
    expect(renderCertificateTable([])).toBe('No certificates to check.');
  });
});
