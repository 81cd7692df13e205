/**
 * Authorization for the simulated API server: members of `system:masters`
 * may do anything; everyone else is judged by the RBAC objects in the store
 * (ClusterRoleBindings, and RoleBindings in the request's namespace), with
 * the API server's matching rules for verbs, API groups, resources,
 * `resource/subresource`, resourceNames and nonResourceURLs. Denials carry
 * the API server's wording.
 */
import type { RequestInfo } from './request-info.js';
import type { ResourceDefinition } from './resources.js';
import type { KubeObject, SimStore } from './store.js';

/** An authenticated (or anonymous) caller. */
export interface UserInfo {
  name: string;
  groups: string[];
  uid?: string;
  extra?: Record<string, string[]>;
}

/** The group whose members bypass authorization, as in kube-apiserver. */
export const SYSTEM_MASTERS = 'system:masters';

interface PolicyRule {
  verbs?: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

interface Subject {
  kind?: string;
  name?: string;
  namespace?: string;
}

interface RoleRef {
  kind?: string;
  name?: string;
}

/** The RBAC types the authorizer reads, resolved once by the server. */
export interface RbacDefinitions {
  roles: ResourceDefinition;
  roleBindings: ResourceDefinition;
  clusterRoles: ResourceDefinition;
  clusterRoleBindings: ResourceDefinition;
}

/** An authorization decision, with the text a denial is reported with. */
export interface Decision {
  allowed: boolean;
  /** Human text for a denial, as the API server phrases it. */
  message: string;
}

function rulesOf(object: KubeObject | undefined): PolicyRule[] {
  const rules = object?.['rules'];
  return Array.isArray(rules) ? (rules as PolicyRule[]) : [];
}

function subjectMatches(subject: Subject, user: UserInfo, bindingNamespace: string): boolean {
  switch (subject.kind) {
    case 'User':
      return subject.name === user.name;
    case 'Group':
      return subject.name !== undefined && user.groups.includes(subject.name);
    case 'ServiceAccount': {
      const namespace = subject.namespace || bindingNamespace;
      return user.name === `system:serviceaccount:${namespace}:${subject.name ?? ''}`;
    }
    default:
      return false;
  }
}

function bindingApplies(binding: KubeObject, user: UserInfo): boolean {
  const subjects = binding['subjects'];
  if (!Array.isArray(subjects)) return false;
  return (subjects as Subject[]).some((s) => subjectMatches(s, user, binding.metadata.namespace ?? ''));
}

function verbMatches(rule: PolicyRule, verb: string): boolean {
  return (rule.verbs ?? []).some((v) => v === '*' || v === verb);
}

function resourceMatches(rule: PolicyRule, resource: string, subresource: string): boolean {
  const combined = subresource ? `${resource}/${subresource}` : resource;
  return (rule.resources ?? []).some(
    (r) => r === '*' || r === combined || (subresource !== '' && r === `*/${subresource}`),
  );
}

function nonResourceMatches(rule: PolicyRule, path: string): boolean {
  return (rule.nonResourceURLs ?? []).some(
    (u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))),
  );
}

/** Whether one rule allows the request. */
export function ruleAllows(rule: PolicyRule, request: RequestInfo): boolean {
  if (!verbMatches(rule, request.verb)) return false;
  if (!request.isResourceRequest) return nonResourceMatches(rule, request.path);
  if (!(rule.apiGroups ?? []).some((g) => g === '*' || g === request.apiGroup)) return false;
  if (!resourceMatches(rule, request.resource, request.subresource)) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(request.name);
}

/** The "… is forbidden: User … cannot …" text of a denial. */
export function denialMessage(user: UserInfo, request: RequestInfo): string {
  if (!request.isResourceRequest) {
    return `forbidden: User "${user.name}" cannot ${request.verb} path "${request.path}"`;
  }
  const qualified = request.apiGroup ? `${request.resource}.${request.apiGroup}` : request.resource;
  const subject = request.name ? `${qualified} "${request.name}"` : qualified;
  const combined = request.subresource ? `${request.resource}/${request.subresource}` : request.resource;
  const scope = request.namespace ? `in the namespace "${request.namespace}"` : 'at the cluster scope';
  return `${subject} is forbidden: User "${user.name}" cannot ${request.verb} resource "${combined}" in API group "${request.apiGroup}" ${scope}`;
}

/** Evaluates RBAC over the objects currently in the store. */
export class RbacAuthorizer {
  readonly #store: SimStore;
  readonly #types: RbacDefinitions;

  constructor(store: SimStore, types: RbacDefinitions) {
    this.#store = store;
    this.#types = types;
  }

  /** Decides whether `user` may make `request`. */
  authorize(user: UserInfo, request: RequestInfo): Decision {
    if (user.groups.includes(SYSTEM_MASTERS)) return { allowed: true, message: '' };
    for (const rule of this.#applicableRules(user, request.namespace)) {
      if (ruleAllows(rule, request)) return { allowed: true, message: '' };
    }
    return { allowed: false, message: denialMessage(user, request) };
  }

  /** All rules granted to `user` cluster-wide, plus those granted in `namespace` (when given). */
  #applicableRules(user: UserInfo, namespace: string): PolicyRule[] {
    const rules: PolicyRule[] = [];
    for (const binding of this.#store.list(this.#types.clusterRoleBindings)) {
      if (!bindingApplies(binding, user)) continue;
      const ref = binding['roleRef'] as RoleRef | undefined;
      if (ref?.kind !== 'ClusterRole' || !ref.name) continue;
      rules.push(...rulesOf(this.#store.get(this.#types.clusterRoles, '', ref.name)));
    }
    if (namespace) {
      for (const binding of this.#store.list(this.#types.roleBindings, namespace)) {
        if (!bindingApplies(binding, user)) continue;
        const ref = binding['roleRef'] as RoleRef | undefined;
        if (!ref?.name) continue;
        if (ref.kind === 'ClusterRole') rules.push(...rulesOf(this.#store.get(this.#types.clusterRoles, '', ref.name)));
        else if (ref.kind === 'Role') rules.push(...rulesOf(this.#store.get(this.#types.roles, namespace, ref.name)));
      }
    }
    return rules;
  }
}
