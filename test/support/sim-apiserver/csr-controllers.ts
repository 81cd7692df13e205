/**
 * SIMULATED kube-controller-manager CSR controllers, for the signer
 * `kubernetes.io/kube-apiserver-client-kubelet` only (a kubelet's TLS
 * bootstrap), run inside the simulated API server when it is started with
 * `csrControllers`. Written from what Kubernetes does, not from its code:
 *
 * - On create, the API server records who asked (`spec.username`,
 *   `spec.groups`, `spec.uid`), overwriting what the body said
 *   (pkg/registry/certificates/certificates/strategy.go, `PrepareForCreate`).
 * - csrapproving (pkg/controller/certificates/approver/sarapprove.go):
 *   a kubelet client CSR is approved when its requestor may `create`
 *   `certificatesigningrequests/nodeclient` (group certificates.k8s.io), or
 *   `…/selfnodeclient` when the requestor is the node the CSR names. A
 *   kubelet client CSR has CN `system:node:<name>`, O exactly
 *   `system:nodes`, no alternative names, and usages `client auth` and
 *   `digital signature` (optionally `key encipherment`)
 *   (pkg/apis/certificates/helpers.go, `IsKubeletClientCSR` /
 *   `ValidateKubeletClientCSR`). Anything else is left alone (no denial: the
 *   real approver never denies, it just does not approve).
 * - csrsigning (pkg/controller/certificates/signer): an approved CSR gets
 *   `status.certificate`, signed by the cluster CA for the request's key.
 *
 * The simulation does this at once, in the create request; the real
 * controllers do it a moment later, so clients watch or poll for the
 * certificate either way.
 */
import type { SimCertificateAuthority } from './pki.js';
import { readCertificateRequest } from './pki.js';
import type { RbacAuthorizer, UserInfo } from './rbac.js';
import type { KubeObject } from './store.js';

/** The signer of kubelet client certificates. */
export const KUBELET_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';

const ALLOWED_USAGES = new Set(['client auth', 'digital signature', 'key encipherment']);

interface CsrSpec {
  request?: string;
  signerName?: string;
  usages?: string[];
  username?: string;
  groups?: string[];
  uid?: string;
}

/** Records the requestor in the CSR's spec, as the API server's create strategy does. */
export function recordRequestor(body: unknown, user: UserInfo): unknown {
  if (typeof body !== 'object' || body === null) return body;
  const object = body as { spec?: CsrSpec };
  const spec: CsrSpec = { ...(object.spec ?? {}) };
  spec.username = user.name;
  spec.groups = [...user.groups];
  if (user.uid !== undefined) spec.uid = user.uid;
  else delete spec.uid;
  return { ...object, spec, status: {} };
}

/**
 * Approves and signs `csr` if the controllers would; returns the updated
 * object, or undefined to leave it pending.
 */
export async function approveAndSign(
  csr: KubeObject,
  deps: { authorizer: RbacAuthorizer; ca: SimCertificateAuthority },
): Promise<KubeObject | undefined> {
  const spec = (csr['spec'] ?? {}) as CsrSpec;
  if (spec.signerName !== KUBELET_CLIENT_SIGNER || !spec.request) return undefined;
  let request;
  try {
    request = await readCertificateRequest(Buffer.from(spec.request, 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
  const usages = spec.usages ?? [];
  const isKubeletClient =
    request.isSignatureValid &&
    request.commonName?.startsWith('system:node:') === true &&
    request.commonName.length > 'system:node:'.length &&
    request.organizations.length === 1 &&
    request.organizations[0] === 'system:nodes' &&
    !request.hasAlternativeNames &&
    usages.includes('client auth') &&
    usages.includes('digital signature') &&
    usages.every((usage) => ALLOWED_USAGES.has(usage));
  if (!isKubeletClient) return undefined;
  const requestor: UserInfo = { name: spec.username ?? '', groups: spec.groups ?? [] };
  const may = (subresource: string): boolean =>
    deps.authorizer.authorize(requestor, {
      isResourceRequest: true,
      path: '',
      verb: 'create',
      apiGroup: 'certificates.k8s.io',
      apiVersion: 'v1',
      namespace: '',
      resource: 'certificatesigningrequests',
      subresource,
      name: '',
    }).allowed;
  const isSelf = requestor.name === request.commonName;
  if (!may('nodeclient') && !(isSelf && may('selfnodeclient'))) return undefined;
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const certificate = await deps.ca.signClientRequest(request);
  return {
    ...csr,
    status: {
      conditions: [
        {
          type: 'Approved',
          status: 'True',
          reason: 'AutoApproved',
          message: 'Auto approving kubelet client certificate after SubjectAccessReview.',
          lastUpdateTime: now,
          lastTransitionTime: now,
        },
      ],
      certificate: Buffer.from(certificate).toString('base64'),
    },
  };
}
