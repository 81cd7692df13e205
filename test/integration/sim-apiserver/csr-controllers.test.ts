/**
 * The simulated kube-controller-manager CSR controllers (csr-controllers.ts,
 * a simulation): a kubelet client CSR is approved and signed only when its
 * requestor may create `certificatesigningrequests/nodeclient` (or
 * `selfnodeclient` for its own node) and the request is a kubelet client
 * request; the certificate then acts as `system:node:<name>`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimApiServer } from '../../support/sim-apiserver/index.js';
import type { SimApiServer } from '../../support/sim-apiserver/index.js';
import { createClientCertificateRequest } from '../../support/sim-apiserver/pki.js';
import { call } from './http-client.js';

const CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
const SECRET = '0123456789abcdef';
const NODE_GROUP = 'system:bootstrappers:kubeadm:default-node-token';

let server: SimApiServer;

beforeAll(async () => {
  server = await startSimApiServer({ csrControllers: true });
  const token = (id: string, groups: string): void => {
    server.setObject({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `bootstrap-token-${id}`, namespace: 'kube-system' },
      type: 'bootstrap.kubernetes.io/token',
      stringData: {
        'token-id': id,
        'token-secret': SECRET,
        'usage-bootstrap-authentication': 'true',
        'auth-extra-groups': groups,
      },
    } as never);
  };
  token('nodetk', NODE_GROUP);
  token('othrtk', 'system:bootstrappers:other');
  // What kubeadm's bootstrap-token phase (and edgeadm's kubeadm driver) bind to the node token group.
  for (const [name, role] of [
    ['kubeadm:kubelet-bootstrap', 'system:node-bootstrapper'],
    ['kubeadm:node-autoapprove-bootstrap', 'system:certificates.k8s.io:certificatesigningrequests:nodeclient'],
  ]) {
    server.setObject({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: NODE_GROUP }],
    } as never);
  }
  // The other token may create CSRs but not have them approved.
  server.setObject({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'other-may-post-csrs' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node-bootstrapper' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:bootstrappers:other' }],
  } as never);
});

afterAll(async () => {
  await server.stop();
});

async function postCsr(options: {
  token: string;
  user: string;
  groups: string[];
  usages?: string[];
  spec?: Record<string, unknown>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary Kubernetes JSON
}): Promise<{ status: number; csr: any; keyPem: string }> {
  const { requestPem, keyPem } = await createClientCertificateRequest({ user: options.user, groups: options.groups });
  const res = await call(server, {
    method: 'POST',
    path: CSRS,
    token: options.token,
    body: {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { generateName: 'node-csr-' },
      spec: {
        request: Buffer.from(requestPem).toString('base64'),
        signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
        usages: options.usages ?? ['digital signature', 'client auth'],
        ...options.spec,
      },
    },
  });
  return { status: res.status, csr: res.json, keyPem };
}

describe('kubelet client CSRs', () => {
  it('approves and signs one from the node token group; the certificate acts as the node', async () => {
    const { status, csr, keyPem } = await postCsr({
      token: `nodetk.${SECRET}`,
      user: 'system:node:edge-1',
      groups: ['system:nodes'],
      // The server records the requestor itself; what the body claims is overwritten.
      spec: { username: 'system:admin', groups: ['system:masters'] },
    });
    expect(status).toBe(201);
    expect(csr.spec.username).toBe('system:bootstrap:nodetk');
    expect(csr.spec.groups).toContain(NODE_GROUP);
    expect(csr.status.conditions[0]).toMatchObject({ type: 'Approved', status: 'True', reason: 'AutoApproved' });
    const certPem = Buffer.from(csr.status.certificate, 'base64').toString('utf8');
    const whoami = await call(server, {
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      cert: { certPem, keyPem },
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    expect(whoami.json.status.userInfo).toEqual({
      username: 'system:node:edge-1',
      groups: ['system:nodes', 'system:authenticated'],
    });
  });

  it('leaves pending a CSR from a requestor without the nodeclient permission', async () => {
    const { status, csr } = await postCsr({
      token: `othrtk.${SECRET}`,
      user: 'system:node:edge-2',
      groups: ['system:nodes'],
    });
    expect(status).toBe(201);
    expect(csr.status?.certificate).toBeUndefined();
    expect(csr.status?.conditions).toBeUndefined();
  });

  it.each([
    ['another common name', { user: 'system:admin', groups: ['system:nodes'] }],
    ['another organization', { user: 'system:node:edge-3', groups: ['system:masters'] }],
    ['an extra organization', { user: 'system:node:edge-3', groups: ['system:nodes', 'system:masters'] }],
    [
      'server auth usage',
      {
        user: 'system:node:edge-3',
        groups: ['system:nodes'],
        usages: ['digital signature', 'client auth', 'server auth'],
      },
    ],
  ])('leaves pending a request that is not a kubelet client request: %s', async (_, shape) => {
    const { csr } = await postCsr({ token: `nodetk.${SECRET}`, ...shape });
    expect(csr.status?.certificate).toBeUndefined();
  });

  it('refuses CSRs to a caller without the bootstrapper role (403)', async () => {
    const res = await call(server, { method: 'POST', path: CSRS, token: null, body: {} });
    expect(res.status).toBe(403);
  });
});
