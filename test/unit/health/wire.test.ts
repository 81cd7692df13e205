/**
 * The health report as the hub reads it from an agent: every field typed
 * and bounded, or the line refused naming the field; never an exception of
 * another kind, whatever the JSON.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isSameReport,
  MAX_HEALTH_TEXT,
  MAX_NOT_READY_NAMES,
  MAX_REPORTED_CERTIFICATES,
  parseHealthReport,
  type ClusterHealthReport,
} from '../../../src/health/wire.js';

const SHA = 'a'.repeat(64);

function fullReport(): Record<string, unknown> {
  return {
    nodes: { total: 3, ready: 2, notReady: ['edge-2'] },
    kubernetesVersion: 'v1.34.4',
    certificates: [
      { kind: 'cluster-ca', subject: 'CN=kubernetes', notAfter: '2036-01-01T00:00:00Z' },
      { kind: 'apiserver-serving', subject: 'CN=kube-apiserver', notAfter: '2027-01-01T00:00:00.000Z' },
    ],
    package: {
      name: 'edge-kubeadm-v1.34.4-amd64',
      version: 'v1.34.4',
      distribution: 'kubeadm',
      manifestSha256: SHA,
      signer: `sha256:${'b'.repeat(64)}`,
      action: 'init',
      at: '2026-11-29T04:00:00Z',
    },
  };
}

describe('parseHealthReport', () => {
  it('keeps every known field, with times in one format', () => {
    const report = parseHealthReport(fullReport());
    expect(report.nodes).toEqual({ total: 3, ready: 2, notReady: ['edge-2'] });
    expect(report.kubernetesVersion).toBe('v1.34.4');
    expect(report.certificates[0]).toEqual({
      kind: 'cluster-ca',
      subject: 'CN=kubernetes',
      notAfter: '2036-01-01T00:00:00.000Z',
    });
    expect(report.package?.at).toBe('2026-11-29T04:00:00.000Z');
    expect(report.package?.signer).toBe(`sha256:${'b'.repeat(64)}`);
  });

  it('leaves out what it does not know', () => {
    const report = parseHealthReport({ ...fullReport(), extra: 'x', nodes: undefined });
    expect(Object.keys(report).sort()).toEqual(['certificates', 'kubernetesVersion', 'package']);
  });

  it.each<[string, (r: Record<string, unknown>) => void, RegExp]>([
    ['more Ready nodes than nodes', (r) => (r.nodes = { total: 1, ready: 2, notReady: [] }), /nodes.ready/],
    [
      'too many names not Ready',
      (r) => (r.nodes = { total: 99, ready: 0, notReady: Array.from({ length: MAX_NOT_READY_NAMES + 1 }, () => 'n') }),
      /notReady/,
    ],
    ['a fractional count', (r) => (r.nodes = { total: 1.5, ready: 0, notReady: [] }), /nodes.total/],
    [
      'too many certificates',
      (r) => (r.certificates = Array.from({ length: MAX_REPORTED_CERTIFICATES + 1 }, () => ({}))),
      /certificates must be a list/,
    ],
    [
      'the hub-client kind, which only the hub knows',
      (r) => (r.certificates = [{ kind: 'hub-client', subject: 'x', notAfter: '2030-01-01T00:00:00Z' }]),
      /certificates\[0\]\.kind/,
    ],
    [
      'a time that is not one',
      (r) => (r.certificates = [{ kind: 'cluster-ca', subject: 'x', notAfter: 'soon' }]),
      /certificates\[0\]\.notAfter/,
    ],
    ['a text too long', (r) => (r.kubernetesVersion = 'v'.repeat(MAX_HEALTH_TEXT + 1)), /kubernetesVersion/],
    [
      'a manifest digest that is not one',
      (r) => ((r.package as Record<string, unknown>).manifestSha256 = 'abc'),
      /manifestSha256/,
    ],
    [
      'a signer that is not a fingerprint',
      (r) => ((r.package as Record<string, unknown>).signer = 'me'),
      /package.signer/,
    ],
    ['an unknown step', (r) => ((r.package as Record<string, unknown>).action = 'join'), /package.action/],
  ])('refuses %s, naming the field', (_name, spoil, message) => {
    const report = fullReport();
    spoil(report);
    expect(() => parseHealthReport(report)).toThrow(message);
  });

  it('either reads any JSON value into a report that reads back the same, or refuses it with an Error', () => {
    const shaped = fc.record({
      nodes: fc.option(
        fc.record({ total: fc.nat(), ready: fc.nat(), notReady: fc.array(fc.string(), { maxLength: 25 }) }),
        { nil: undefined },
      ),
      kubernetesVersion: fc.option(fc.string(), { nil: undefined }),
      certificates: fc.array(
        fc.record({
          kind: fc.constantFrom('cluster-ca', 'apiserver-serving', 'hub-client', 'other'),
          subject: fc.string(),
          notAfter: fc.oneof(
            fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
            fc.string(),
          ),
        }),
        { maxLength: 10 },
      ),
    });
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), shaped), (value) => {
        let report: ClusterHealthReport;
        try {
          report = parseHealthReport(JSON.parse(JSON.stringify(value ?? null)));
        } catch (error) {
          expect(error).toBeInstanceOf(Error);
          expect((error as Error).message.length).toBeGreaterThan(0);
          return;
        }
        const again = parseHealthReport(JSON.parse(JSON.stringify(report)));
        expect(again).toEqual(report);
        expect(isSameReport(again, report)).toBe(true);
      }),
    );
  });
});

describe('isSameReport', () => {
  it('tells a changed readiness, certificate or package from the same report', () => {
    const base = parseHealthReport(fullReport());
    expect(isSameReport(base, parseHealthReport(fullReport()))).toBe(true);
    const changed = fullReport();
    changed.nodes = { total: 3, ready: 3, notReady: [] };
    expect(isSameReport(base, parseHealthReport(changed))).toBe(false);
    const renewed = fullReport();
    (renewed.certificates as Array<Record<string, unknown>>)[1]!.notAfter = '2028-01-01T00:00:00Z';
    expect(isSameReport(base, parseHealthReport(renewed))).toBe(false);
    const upgraded = fullReport();
    (upgraded.package as Record<string, unknown>).action = 'upgrade';
    expect(isSameReport(base, parseHealthReport(upgraded))).toBe(false);
  });
});
