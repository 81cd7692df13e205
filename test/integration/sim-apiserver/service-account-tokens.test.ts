/**
 * The SIMULATED token controller and ServiceAccount token authentication
 * of the simulated API server, and impersonation decided by RBAC for that
 * ServiceAccount — with the very objects `register-cloud
 * --create-service-account` applies (agentRbacObjects).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimApiServer, type SimApiServer } from '../../support/sim-apiserver/index.js';
import { agentRbacObjects, agentTokenSecret } from '../../../src/registration/agent-rbac.js';
import { call } from './http-client.js';

const SECRET_PATH = '/api/v1/namespaces/kube-system/secrets/edgeadm-tunnel-agent-token';
const SA_PATH = '/api/v1/namespaces/kube-system/serviceaccounts/edgeadm-tunnel-agent';

let server: SimApiServer;

beforeEach(async () => {
  server = await startSimApiServer({});
});

afterEach(async () => {
  await server.stop();
});

async function filledToken(): Promise<string> {
  for (let tries = 0; tries < 100; tries++) {
    const secret = await call(server, { path: SECRET_PATH });
    const encoded = secret.json?.data?.token as string | undefined;
    if (encoded) return Buffer.from(encoded, 'base64').toString('utf8');
    await sleep(20);
  }
  throw new Error('the simulated token controller did not fill the token');
}

async function createServiceAccountAndToken(): Promise<string> {
  const [account] = agentRbacObjects();
  expect((await call(server, { method: 'POST', path: SA_PATH.replace(/\/[^/]+$/, ''), body: account })).status).toBe(
    201,
  );
  const created = await call(server, {
    method: 'POST',
    path: '/api/v1/namespaces/kube-system/secrets',
    body: agentTokenSecret(),
  });
  expect(created.status).toBe(201);
  return filledToken();
}

describe('simulated ServiceAccount tokens', () => {
  it('fills the token Secret and authenticates its token as the ServiceAccount', async () => {
    const token = await createServiceAccountAndToken();
    const review = await call(server, {
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      token,
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    expect(review.json.status.userInfo.username).toBe('system:serviceaccount:kube-system:edgeadm-tunnel-agent');
    expect(review.json.status.userInfo.groups).toEqual(
      expect.arrayContaining(['system:serviceaccounts', 'system:serviceaccounts:kube-system']),
    );
  });

  it('stops accepting the token once the ServiceAccount is deleted', async () => {
    const token = await createServiceAccountAndToken();
    expect((await call(server, { path: '/version', token })).status).toBe(200);
    expect((await call(server, { method: 'DELETE', path: SA_PATH })).status).toBe(200);
    expect((await call(server, { path: '/version', token })).status).toBe(401);
  });

  it('lets the ServiceAccount impersonate users and groups only once the ClusterRole is bound', async () => {
    const token = await createServiceAccountAndToken();
    const asOps = { 'Impersonate-User': 'ops', 'Impersonate-Group': 'ops-team' };
    const denied = await call(server, { path: '/version', token, headers: asOps });
    expect(denied.status).toBe(403);
    expect(denied.json.message).toContain('cannot impersonate resource "users"');
    const [, role, binding] = agentRbacObjects();
    for (const [object, path] of [
      [role, '/apis/rbac.authorization.k8s.io/v1/clusterroles'],
      [binding, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings'],
    ] as const) {
      expect((await call(server, { method: 'POST', path, body: object })).status).toBe(201);
    }
    const review = await call(server, {
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      token,
      headers: asOps,
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    expect(review.status).toBe(201);
    expect(review.json.status.userInfo.username).toBe('ops');
    expect(review.json.status.userInfo.groups).toContain('ops-team');
    // The role grants impersonation and nothing else: reading secrets as itself is refused.
    expect((await call(server, { path: SECRET_PATH, token })).status).toBe(403);
  });
});
