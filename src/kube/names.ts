/**
 * The naming rules of Kubernetes (and of DNS) that edgeadm applies where a
 * name enters from outside: cluster labels at the hub, host names and
 * labels in fleet inventories. One copy of each rule, as pure predicates,
 * so that the hub and the inventory parsers cannot disagree.
 *
 * The rules are those of k8s.io/apimachinery/pkg/util/validation
 * (IsDNS1123Label, IsDNS1123Subdomain, IsQualifiedName, IsValidLabelValue).
 */

/** Longest DNS-1123 label (one dot-free part of a name). */
export const DNS1123_LABEL_MAX_LENGTH = 63;
/** Longest DNS-1123 subdomain (a whole dotted name). */
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
/** Longest label value, and the name part of a label key. */
export const LABEL_NAME_MAX_LENGTH = 63;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** A DNS-1123 label: lower-case letters, digits and `-`, at most 63, starting and ending alphanumeric. */
export function isDns1123Label(name: string): boolean {
  return name.length <= DNS1123_LABEL_MAX_LENGTH && DNS1123_LABEL.test(name);
}

/**
 * A cluster's name at the hub: a DNS-1123 label (at most 63 characters), since
 * it is one URL path segment (`/clusters/NAME/…`) and the CN of its agent's
 * certificate. The one rule for the hub, its clients and register-cloud.
 */
export function isClusterName(name: string): boolean {
  return isDns1123Label(name);
}

/** A DNS-1123 subdomain: dot-separated DNS-1123 labels, at most 253 characters in all. */
export function isDns1123Subdomain(name: string): boolean {
  return name.length <= DNS1123_SUBDOMAIN_MAX_LENGTH && name.split('.').every(isDns1123Label);
}

/** A label key: an optional DNS-1123 subdomain prefix and `/`, then a name of at most 63 characters. */
export function isLabelKey(key: string): boolean {
  const slash = key.indexOf('/');
  const prefix = slash === -1 ? undefined : key.slice(0, slash);
  const name = slash === -1 ? key : key.slice(slash + 1);
  if (prefix !== undefined && !isDns1123Subdomain(prefix)) return false;
  return name.length <= LABEL_NAME_MAX_LENGTH && LABEL_NAME.test(name);
}

/** A label value: empty, or at most 63 letters, digits, `-`, `_` and `.`, starting and ending alphanumeric. */
export function isLabelValue(value: string): boolean {
  return value === '' || (value.length <= LABEL_NAME_MAX_LENGTH && LABEL_NAME.test(value));
}

/**
 * The first label of `labels` that breaks the rules, described for an error
 * message; undefined when all are valid.
 */
export function labelProblem(labels: Readonly<Record<string, unknown>>): string | undefined {
  for (const [key, value] of Object.entries(labels)) {
    if (!isLabelKey(key)) {
      return `label key ${JSON.stringify(key)} is not a Kubernetes label key (an optional DNS prefix and /, then at most 63 letters, digits, - _ .)`;
    }
    if (typeof value !== 'string') return `label ${JSON.stringify(key)} has a value that is not a string`;
    if (!isLabelValue(value)) {
      return `label ${JSON.stringify(key)} has value ${JSON.stringify(value)}, not a Kubernetes label value (at most 63 letters, digits, - _ ., alphanumeric at both ends)`;
    }
  }
  return undefined;
}
