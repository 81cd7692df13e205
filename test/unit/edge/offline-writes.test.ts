import { describe, expect, it } from 'vitest';
import {
  answerOfflineNodeRegistration,
  isNodeRegistration,
  offlineRefusal,
  registeredNodeName,
} from '../../../src/edge/offline-writes.js';

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

  it('explains a refusal', () => {
    const status = offlineRefusal('PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/edge-1');
    expect(status).toMatchObject({ kind: 'Status', code: 503, reason: 'ServiceUnavailable' });
    expect(status.message).toContain('the API server is unreachable');
  });
});
