import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  answerOfflineNodeRegistration,
  isDnsSubdomainName,
  isNodeRegistration,
  offlineRefusal,
  registeredNodeName,
} from '../../../src/edge/offline-writes.js';

/** One DNS-1123 label: lower-case alphanumerics and inner '-' (the API server checks only the whole name's length). */
const label = fc
  .tuple(
    fc.stringMatching(/^[a-z0-9]$/),
    fc.stringMatching(/^[a-z0-9-]{0,10}$/),
    fc.stringMatching(/^[a-z0-9]$/),
    fc.boolean(),
  )
  .map(([first, middle, last, isShort]) => (isShort ? first : `${first}${middle}${last}`));
/** Valid node names: dot-separated labels. */
const dnsNames = fc.array(label, { minLength: 1, maxLength: 4 }).map((labels) => labels.join('.'));
/**
 * Names that are not DNS-1123 subdomains: a valid name broken by a character
 * it may not hold (path and query syntax among them), by a bad label edge,
 * or by its length.
 */
const nonDnsNames = fc.oneof(
  fc
    .tuple(
      dnsNames,
      fc.constantFrom('/', '?', '#', '%', '\\', '_', ' ', 'A', 'Z', ':', '@', '..', '\u00e9', '\n', '\u0000'),
      fc.nat(),
    )
    .map(([name, bad, at]) => {
      const index = at % (name.length + 1);
      return `${name.slice(0, index)}${bad}${name.slice(index)}`;
    }),
  dnsNames.map((name) => `-${name}`),
  dnsNames.map((name) => `${name}-`),
  dnsNames.map((name) => `${name}.`),
  dnsNames.map((name) => `.${name}`),
  fc.constant('a'.repeat(254)),
);

/** The names the issue reported answered 409 for a node never seen. */
const ISSUE_NAMES = ['edge-1/', 'edge-1?x=1', 'x/../edge-1', '../namespaces/kube-system/secrets/topsecret'];

describe('offline write policy', () => {
  it('recognises node registration only', () => {
    expect(isNodeRegistration('POST', '/api/v1/nodes')).toBe(true);
    expect(isNodeRegistration('PATCH', '/api/v1/nodes/edge-1/status')).toBe(false);
    expect(isNodeRegistration('POST', '/api/v1/namespaces/default/pods')).toBe(false);
  });

  it('answers 409 AlreadyExists for a known node, and 503 otherwise', () => {
    const name = registeredNodeName(JSON.stringify({ kind: 'Node', metadata: { name: 'edge-1' } }));
    expect(name).toBe('edge-1');
    const known = answerOfflineNodeRegistration(name, true);
    expect(known.kind).toBe('already-exists');
    expect(known.status).toMatchObject({
      code: 409,
      reason: 'AlreadyExists',
      message: 'nodes "edge-1" already exists',
    });
    expect(answerOfflineNodeRegistration(name, false).status.code).toBe(503);
    expect(answerOfflineNodeRegistration(registeredNodeName('not json'), true).status.code).toBe(503);
  });

  it('refuses, even for a "known" name, every name that is not a DNS-1123 subdomain (generated, and the issue\'s four)', () => {
    for (const name of ISSUE_NAMES) expect(answerOfflineNodeRegistration(name, true).status.code).toBe(503);
    fc.assert(
      fc.property(nonDnsNames, (name) => {
        expect(answerOfflineNodeRegistration(name, true)).toMatchObject({ kind: 'refuse', status: { code: 503 } });
      }),
      { numRuns: 500 },
    );
  });

  it('answers 409 for every valid node name that is known', () => {
    fc.assert(
      fc.property(dnsNames, (name) => {
        expect(isDnsSubdomainName(name)).toBe(true);
        expect(answerOfflineNodeRegistration(name, true).status).toMatchObject({ code: 409, reason: 'AlreadyExists' });
      }),
      { numRuns: 300 },
    );
    expect(isDnsSubdomainName('a'.repeat(253))).toBe(true);
    for (const name of ISSUE_NAMES) expect(isDnsSubdomainName(name)).toBe(false);
  });

  it('explains a refusal', () => {
    const status = offlineRefusal('PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/edge-1');
    expect(status).toMatchObject({ kind: 'Status', code: 503, reason: 'ServiceUnavailable' });
    expect(status.message).toContain('the API server is unreachable');
  });
});
