/**
 * SIMULATED service-account token controller and authenticator. A real
 * cluster's kube-controller-manager fills a `kubernetes.io/service-account-token`
 * Secret with a signed JWT, and kube-apiserver accepts that JWT as the
 * ServiceAccount while the Secret and the ServiceAccount (same uid) exist.
 * This stand-in does the same with an opaque random token (not a JWT): it
 * fills `data.token`, `data["ca.crt"]` and `data.namespace` shortly after
 * such a Secret appears (asynchronously, as the controller does), and it
 * authenticates a bearer token that matches a filled Secret whose
 * ServiceAccount still exists with the recorded uid.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { UserInfo } from './rbac.js';
import type { ResourceDefinition } from './resources.js';
import type { KubeObject, SimStore } from './store.js';

/** The Secret type the token controller fills. */
export const SERVICE_ACCOUNT_TOKEN_TYPE = 'kubernetes.io/service-account-token';
/** The annotation naming the ServiceAccount of a token Secret. */
export const SERVICE_ACCOUNT_NAME_ANNOTATION = 'kubernetes.io/service-account.name';
/** The annotation the controller records the ServiceAccount's uid in. */
export const SERVICE_ACCOUNT_UID_ANNOTATION = 'kubernetes.io/service-account.uid';
/** Random bytes in a simulated token. */
const TOKEN_BYTES = 32;

/** The types the controller and the authenticator read. */
export interface ServiceAccountTokenTypes {
  secrets: ResourceDefinition;
  serviceAccounts: ResourceDefinition;
}

function decode(value: unknown): string | undefined {
  return typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : undefined;
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function sameType(a: ResourceDefinition, b: ResourceDefinition): boolean {
  return a.group === b.group && a.resource === b.resource;
}

/** The ServiceAccount a token Secret stands for, when it still exists with the recorded uid. */
function serviceAccountOf(
  store: SimStore,
  types: ServiceAccountTokenTypes,
  secret: KubeObject,
): KubeObject | undefined {
  const annotations = secret.metadata.annotations ?? {};
  const name = annotations[SERVICE_ACCOUNT_NAME_ANNOTATION];
  if (!name) return undefined;
  const account = store.get(types.serviceAccounts, secret.metadata.namespace ?? '', name);
  const uid = annotations[SERVICE_ACCOUNT_UID_ANNOTATION];
  if (!account || (uid !== undefined && account.metadata.uid !== uid)) return undefined;
  return account;
}

/**
 * Starts the simulated token controller on `store`: every token Secret
 * whose ServiceAccount exists gets its token. Returns the stop function.
 */
export function startTokenController(store: SimStore, types: ServiceAccountTokenTypes, caPem: string): () => void {
  const fill = (secret: KubeObject): void => {
    const current = store.get(types.secrets, secret.metadata.namespace ?? '', secret.metadata.name);
    if (!current || current['type'] !== SERVICE_ACCOUNT_TOKEN_TYPE || current.metadata.deletionTimestamp) return;
    const data = (current['data'] ?? {}) as Record<string, string>;
    if (data['token']) return;
    const account = serviceAccountOf(store, types, current);
    if (!account) return;
    const namespace = current.metadata.namespace ?? '';
    current.metadata.annotations = {
      ...current.metadata.annotations,
      [SERVICE_ACCOUNT_UID_ANNOTATION]: account.metadata.uid ?? '',
    };
    current['data'] = {
      ...data,
      token: Buffer.from(`sim-sa-token.${randomBytes(TOKEN_BYTES).toString('hex')}`).toString('base64'),
      'ca.crt': Buffer.from(caPem).toString('base64'),
      namespace: Buffer.from(namespace).toString('base64'),
    };
    store.put(types.secrets, current);
  };
  const unsubscribe = store.subscribe((event) => {
    if (event.type === 'DELETED') return;
    if (sameType(event.definition, types.secrets) && event.object['type'] === SERVICE_ACCOUNT_TOKEN_TYPE) {
      // A controller acts after the write, not inside it.
      setImmediate(() => fill(event.object));
    } else if (sameType(event.definition, types.serviceAccounts)) {
      // A token Secret created before its ServiceAccount is filled once the account appears.
      setImmediate(() => {
        for (const secret of store.list(types.secrets, event.object.metadata.namespace)) fill(secret);
      });
    }
  });
  return unsubscribe;
}

/** The ServiceAccount user a bearer token authenticates as, or undefined when no live token Secret holds it. */
export function authenticateServiceAccountToken(
  store: SimStore,
  types: ServiceAccountTokenTypes,
  token: string,
): UserInfo | undefined {
  for (const secret of store.list(types.secrets)) {
    if (secret['type'] !== SERVICE_ACCOUNT_TOKEN_TYPE || secret.metadata.deletionTimestamp) continue;
    const stored = decode(((secret['data'] ?? {}) as Record<string, unknown>)['token']);
    if (stored === undefined || !sameText(stored, token)) continue;
    const account = serviceAccountOf(store, types, secret);
    if (!account) return undefined;
    const namespace = secret.metadata.namespace ?? '';
    return {
      name: `system:serviceaccount:${namespace}:${account.metadata.name}`,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`],
      ...(account.metadata.uid ? { uid: account.metadata.uid } : {}),
    };
  }
  return undefined;
}
