/**
 * The `kube-public/cluster-info` ConfigMap: the public, anonymous-readable
 * document a joining node starts from. `data.kubeconfig` holds the API
 * server address and CA; `data["jws-kubeconfig-<token id>"]` holds, for each
 * token allowed to sign, the detached JWS of that kubeconfig.
 *
 * Owns building and signing the ConfigMap (edgeadm signs it itself when it
 * creates a token, so discovery works on any distribution) and the checks a
 * joining node makes on it, with kubeadm's words in the errors.
 */
import { EdgeadmError } from '../errors.js';
import type { BootstrapToken } from './bootstrap-token.js';
import { computeDetachedSignature, isDetachedSignatureValid } from './jws.js';

/** Namespace of the ConfigMap. */
export const CLUSTER_INFO_NAMESPACE = 'kube-public';
/** Name of the ConfigMap. */
export const CLUSTER_INFO_NAME = 'cluster-info';
/** Where the API server serves it. */
export const CLUSTER_INFO_PATH = `/api/v1/namespaces/${CLUSTER_INFO_NAMESPACE}/configmaps/${CLUSTER_INFO_NAME}`;
/** The key that holds the kubeconfig. */
export const CLUSTER_INFO_KUBECONFIG_KEY = 'kubeconfig';
/** The prefix of the per-token signature keys. */
export const JWS_SIGNATURE_KEY_PREFIX = 'jws-kubeconfig-';

/** The key of the signature for one token id. */
export function jwsSignatureKey(tokenId: string): string {
  return `${JWS_SIGNATURE_KEY_PREFIX}${tokenId}`;
}

/** The cluster-info ConfigMap, as the API serves it. */
export interface ClusterInfoConfigMap {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: { name: string; namespace: string };
  data: Record<string, string>;
}

/**
 * Replaces every signature in `data` with one per token, over the current
 * kubeconfig. Old signatures go, as the controller manager's signer drops
 * them: a signature for a token that no longer signs must not linger.
 */
export function signClusterInfoData(
  data: Readonly<Record<string, string>>,
  tokens: readonly BootstrapToken[],
): Record<string, string> {
  const kubeconfig = data[CLUSTER_INFO_KUBECONFIG_KEY];
  if (kubeconfig === undefined) {
    throw new EdgeadmError(`cluster-info has no ${CLUSTER_INFO_KUBECONFIG_KEY} key to sign`, {
      code: 'E_CLUSTER_INFO_INVALID',
    });
  }
  const signed = Object.fromEntries(Object.entries(data).filter(([key]) => !key.startsWith(JWS_SIGNATURE_KEY_PREFIX)));
  for (const token of tokens) {
    signed[jwsSignatureKey(token.id)] = computeDetachedSignature({
      content: kubeconfig,
      tokenId: token.id,
      tokenSecret: token.secret,
    });
  }
  return signed;
}

/** Builds the ConfigMap for a kubeconfig, signed for `tokens`. */
export function clusterInfoConfigMap(options: {
  kubeconfig: string;
  tokens?: readonly BootstrapToken[];
}): ClusterInfoConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: CLUSTER_INFO_NAME, namespace: CLUSTER_INFO_NAMESPACE },
    data: signClusterInfoData({ [CLUSTER_INFO_KUBECONFIG_KEY]: options.kubeconfig }, options.tokens ?? []),
  };
}

/**
 * Reads the `data` of a ConfigMap from an API response body.
 *
 * @throws {EdgeadmError} `E_DISCOVERY_BAD_RESPONSE` when the body is not a
 * ConfigMap with string data.
 */
export function parseClusterInfoResponse(body: string): Record<string, string> {
  let document: unknown;
  try {
    document = JSON.parse(body);
  } catch (error) {
    throw new EdgeadmError(`the cluster-info ConfigMap response is not JSON: ${(error as Error).message}`, {
      code: 'E_DISCOVERY_BAD_RESPONSE',
      cause: error,
    });
  }
  const data = (document as { data?: unknown } | null)?.data ?? {};
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new EdgeadmError('the cluster-info ConfigMap response has no data map', { code: 'E_DISCOVERY_BAD_RESPONSE' });
  }
  return Object.fromEntries(
    Object.entries(data).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

/**
 * Checks the kubeconfig in cluster-info against the token's signature and
 * returns it: proof that whoever served it knows the token secret.
 *
 * @throws {EdgeadmError} with kubeadm's message and one of the codes
 * `E_DISCOVERY_NO_KUBECONFIG`, `E_DISCOVERY_TOKEN_EXPIRED` (the signature
 * key is there but empty) or `E_DISCOVERY_JWS_INVALID` (wrong secret, or a
 * kubeconfig changed on the way).
 */
export function verifyClusterInfo(data: Readonly<Record<string, string>>, token: BootstrapToken): string {
  const kubeconfig = data[CLUSTER_INFO_KUBECONFIG_KEY];
  if (kubeconfig === undefined || kubeconfig.length === 0) {
    throw new EdgeadmError(
      `there is no ${CLUSTER_INFO_KUBECONFIG_KEY} key in the ${CLUSTER_INFO_NAME} ConfigMap. This API Server isn't set up for token bootstrapping, can't connect`,
      { code: 'E_DISCOVERY_NO_KUBECONFIG' },
    );
  }
  const signature = data[jwsSignatureKey(token.id)];
  if (signature === undefined || signature.length === 0) {
    throw new EdgeadmError(
      `token id ${JSON.stringify(token.id)} is invalid for this cluster or it has expired. Use "edgeadm token create" on the control-plane node to create a new valid token`,
      { code: 'E_DISCOVERY_TOKEN_EXPIRED' },
    );
  }
  if (!isDetachedSignatureValid({ signature, content: kubeconfig, tokenId: token.id, tokenSecret: token.secret })) {
    throw new EdgeadmError(
      "failed to verify JWS signature of received cluster info object, can't trust this API Server",
      {
        code: 'E_DISCOVERY_JWS_INVALID',
        hints: [
          'The token secret does not match the one the cluster signed with: check for a typo in --token, or create a new token on the control plane.',
          'If the token is right, something between this host and the API server changed the answer.',
        ],
      },
    );
  }
  return kubeconfig;
}
