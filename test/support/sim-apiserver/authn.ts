/**
 * Authentication for the simulated API server, in kube-apiserver's order:
 * an x509 client certificate signed by the server's CA (CN = user, O =
 * groups), then a bearer token — a static token from the options, or a
 * bootstrap token `<id>.<secret>` checked against its
 * `bootstrap-token-<id>` Secret in kube-system (type, expiry, and
 * `usage-bootstrap-authentication`), or a ServiceAccount token filled in
 * by the simulated token controller (service-account-tokens.ts). A request without credentials (or
 * with a non-Bearer Authorization header) is anonymous, or, with anonymous
 * access off (kube-apiserver's `--anonymous-auth=false`, which k3s sets),
 * refused with 401 as kube-apiserver's authentication filter refuses it; a
 * request with bad credentials is refused with 401.
 *
 * Bootstrap tokens follow kube-apiserver's authenticator
 * (plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go,
 * `AuthenticateToken`): a Secret being deleted, of another type, with
 * another secret or id, expired (an unparseable expiration counts as
 * expired), without `usage-bootstrap-authentication=true`, or with any
 * `auth-extra-groups` entry that fails the bootstrap group pattern
 * (cluster-bootstrap util/secrets `GetGroups`) does not authenticate.
 *
 * Impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`,
 * `Impersonate-Extra-*`) is honoured when the caller may impersonate: members
 * of system:masters always, others when RBAC grants the `impersonate` verb
 * on users, groups, serviceaccounts, uids or userextras.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { RequestInfo } from './request-info.js';
import type { ResourceDefinition } from './resources.js';
import type { RbacAuthorizer, UserInfo } from './rbac.js';
import { authenticateServiceAccountToken } from './service-account-tokens.js';
import type { SimStore } from './store.js';
import { badRequest, forbidden, unauthorized } from './status.js';

/** The user a static bearer token stands for. */
export interface TokenIdentity {
  user: string;
  groups?: string[];
}

/** The identity given to requests that carry no credentials. */
export const ANONYMOUS: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'] };

const AUTHENTICATED_GROUP = 'system:authenticated';
const BOOTSTRAP_TOKEN_PATTERN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const BOOTSTRAP_TOKEN_SECRET_TYPE = 'bootstrap.kubernetes.io/token';
const BOOTSTRAPPERS_GROUP = 'system:bootstrappers';
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
/** cluster-bootstrap's `BootstrapGroupPattern`, matched against each extra group whole. */
const BOOTSTRAP_GROUP_PATTERN = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;

/** Inputs of the {@link Authenticator}. */
export interface AuthenticatorOptions {
  store: SimStore;
  secrets: ResourceDefinition;
  /** Static bearer tokens. */
  tokens: Map<string, TokenIdentity>;
  /** Whether client certificates signed by the server's CA authenticate their CN/O. */
  acceptClientCertificates: boolean;
  /** Whether bootstrap-token Secrets authenticate `<id>.<secret>` bearer tokens. */
  acceptBootstrapTokens: boolean;
  /** Whether a request without credentials is anonymous (true) or refused with 401 (false). */
  isAnonymousAllowed: boolean;
  /** ServiceAccounts, for the tokens of the simulated token controller (service-account-tokens.ts). */
  serviceAccounts: ResourceDefinition;
}

function withAuthenticatedGroup(user: UserInfo): UserInfo {
  return user.groups.includes(AUTHENTICATED_GROUP) ? user : { ...user, groups: [...user.groups, AUTHENTICATED_GROUP] };
}

function decode(value: unknown): string | undefined {
  return typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : undefined;
}

function constantTimeEquals(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Decides who sent a request. */
export class Authenticator {
  readonly #options: AuthenticatorOptions;

  constructor(options: AuthenticatorOptions) {
    this.#options = options;
  }

  /** The caller of `req`; throws a 401 ApiError for bad credentials. */
  authenticate(req: IncomingMessage): UserInfo {
    const fromCertificate = this.#fromClientCertificate(req);
    if (fromCertificate) return fromCertificate;
    // As in kube-apiserver, only a non-empty Bearer credential is checked; any other
    // Authorization header (Basic, an empty Bearer) leaves the request anonymous.
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    if (!match?.[1]) {
      if (!this.#options.isAnonymousAllowed) throw unauthorized();
      return { name: ANONYMOUS.name, groups: [...ANONYMOUS.groups] };
    }
    const token = match[1];
    const identity = this.#options.tokens.get(token);
    if (identity) return withAuthenticatedGroup({ name: identity.user, groups: [...(identity.groups ?? [])] });
    const bootstrap = this.#options.acceptBootstrapTokens ? this.#fromBootstrapToken(token) : undefined;
    if (bootstrap) return bootstrap;
    const { store, secrets, serviceAccounts } = this.#options;
    const account = authenticateServiceAccountToken(store, { secrets, serviceAccounts }, token);
    if (account) return withAuthenticatedGroup(account);
    throw unauthorized();
  }

  #fromClientCertificate(req: IncomingMessage): UserInfo | undefined {
    if (!this.#options.acceptClientCertificates) return undefined;
    const socket = req.socket as TLSSocket;
    if (typeof socket.getPeerCertificate !== 'function') return undefined;
    const peer = socket.getPeerCertificate();
    if (!peer || Object.keys(peer).length === 0) return undefined;
    // A certificate the CA did not sign is refused, as kube-apiserver's x509 authenticator does.
    if (!socket.authorized || !peer.subject) throw unauthorized();
    const subject = peer.subject as unknown as Record<string, string | string[] | undefined>;
    const cn = subject['CN'];
    const name = Array.isArray(cn) ? cn[0] : cn;
    if (!name) return undefined;
    const o = subject['O'];
    const groups = o === undefined ? [] : Array.isArray(o) ? o : [o];
    return withAuthenticatedGroup({ name, groups });
  }

  #fromBootstrapToken(token: string): UserInfo | undefined {
    const match = BOOTSTRAP_TOKEN_PATTERN.exec(token);
    if (!match) return undefined;
    const [, id = '', secret = ''] = match;
    const stored = this.#options.store.get(this.#options.secrets, 'kube-system', `bootstrap-token-${id}`);
    if (!stored || stored['type'] !== BOOTSTRAP_TOKEN_SECRET_TYPE || stored.metadata.deletionTimestamp)
      return undefined;
    const data = (stored['data'] ?? {}) as Record<string, unknown>;
    if (decode(data['token-id']) !== id) return undefined;
    const storedSecret = decode(data['token-secret']);
    if (storedSecret === undefined || !constantTimeEquals(storedSecret, secret)) return undefined;
    if (decode(data['usage-bootstrap-authentication']) !== 'true') return undefined;
    const expiration = decode(data['expiration']);
    if (expiration !== undefined && expiration !== '') {
      // Go's time.Parse(time.RFC3339, …): anything else counts as expired.
      const expiresAt = RFC3339.test(expiration) ? Date.parse(expiration) : Number.NaN;
      if (Number.isNaN(expiresAt) || expiresAt <= Date.now()) return undefined;
    }
    const extraGroups = decode(data['auth-extra-groups']) ?? '';
    // Split on commas only and matched whole, as GetGroups does: a space, an
    // empty entry or the bare default group makes the whole token fail.
    const extra = extraGroups === '' ? [] : extraGroups.split(',');
    if (!extra.every((group) => BOOTSTRAP_GROUP_PATTERN.test(group))) return undefined;
    const groups = [...new Set([BOOTSTRAPPERS_GROUP, ...extra])].sort();
    return withAuthenticatedGroup({ name: `system:bootstrap:${id}`, groups });
  }
}

/** Who a request acts as after impersonation, and what it asked for. */
export interface ImpersonationResult {
  effective: UserInfo;
  impersonatedUser?: string;
  impersonatedGroups?: string[];
}

function headerValues(req: IncomingMessage, name: string): string[] {
  return req.headersDistinct[name] ?? [];
}

function serviceAccountParts(user: string): { namespace: string; name: string } | undefined {
  const match = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(user);
  return match ? { namespace: match[1] ?? '', name: match[2] ?? '' } : undefined;
}

function impersonationCheck(resource: string, name: string, namespace = '', apiGroup = ''): RequestInfo {
  return {
    isResourceRequest: true,
    path: '',
    verb: 'impersonate',
    apiGroup,
    apiVersion: 'v1',
    namespace,
    resource,
    subresource: '',
    name,
  };
}

/** Applies the Impersonate-* headers of `req`, checking that `user` may use them. */
export function impersonate(req: IncomingMessage, user: UserInfo, authorizer: RbacAuthorizer): ImpersonationResult {
  const [impersonatedUser, ...extraUsers] = headerValues(req, 'impersonate-user');
  const groups = headerValues(req, 'impersonate-group');
  const [uid] = headerValues(req, 'impersonate-uid');
  const extras: Record<string, string[]> = {};
  for (const [header, values] of Object.entries(req.headersDistinct)) {
    if (header.startsWith('impersonate-extra-') && values) {
      extras[decodeURIComponent(header.slice('impersonate-extra-'.length))] = values;
    }
  }
  if (impersonatedUser === undefined) {
    if (groups.length > 0 || uid !== undefined || Object.keys(extras).length > 0) {
      throw badRequest('requested impersonation of groups, uid or extra without impersonating a user');
    }
    return { effective: user };
  }
  if (extraUsers.length > 0) throw badRequest('only one Impersonate-User header may be given');

  const checks: RequestInfo[] = [];
  const serviceAccount = serviceAccountParts(impersonatedUser);
  checks.push(
    serviceAccount
      ? impersonationCheck('serviceaccounts', serviceAccount.name, serviceAccount.namespace)
      : impersonationCheck('users', impersonatedUser),
  );
  for (const group of groups) checks.push(impersonationCheck('groups', group));
  if (uid !== undefined) checks.push(impersonationCheck('uids', uid, '', 'authentication.k8s.io'));
  for (const key of Object.keys(extras)) {
    for (const value of extras[key] ?? []) {
      checks.push({ ...impersonationCheck('userextras', value, '', 'authentication.k8s.io'), subresource: key });
    }
  }
  for (const check of checks) {
    const decision = authorizer.authorize(user, check);
    if (!decision.allowed)
      throw forbidden({ resource: check.resource, group: check.apiGroup, name: check.name }, decision.message);
  }

  const effectiveGroups = [...groups];
  if (serviceAccount && groups.length === 0) {
    effectiveGroups.push('system:serviceaccounts', `system:serviceaccounts:${serviceAccount.namespace}`);
  }
  if (impersonatedUser !== ANONYMOUS.name && !effectiveGroups.includes(AUTHENTICATED_GROUP)) {
    effectiveGroups.push(AUTHENTICATED_GROUP);
  }
  const effective: UserInfo = { name: impersonatedUser, groups: effectiveGroups };
  if (uid !== undefined) effective.uid = uid;
  if (Object.keys(extras).length > 0) effective.extra = extras;
  return { effective, impersonatedUser, impersonatedGroups: groups };
}
