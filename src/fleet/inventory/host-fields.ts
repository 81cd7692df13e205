/**
 * What a host's fields may hold, in both inventory formats. Each rule is
 * checked where the field is read, and an error names the host and the
 * field, so a 300-host inventory with one bad line is refused before any
 * host is touched.
 *
 * Why these rules: host names become file names (`hosts/<name>.log`),
 * `--limit` terms and lines of `fleet plan`; addresses, users and bastions go
 * to SSH; labels go to Kubernetes. A newline, a slash or a shell
 * metacharacter in any of them would split an output line, share a log
 * file or reach a command line.
 *
 * - host and group names: 1 to 253 of `A-Z a-z 0-9 . _ -`, starting and
 *   ending with a letter or digit (DNS names, IPv4 addresses and Ansible's
 *   usual `store_001` all fit; `a b`, `a/b`, `a:b` do not);
 * - addresses: an IP address, or a DNS host name (RFC 1123: letters,
 *   digits, `-`, dot-separated, at most 253);
 * - SSH users: POSIX portable user names (`A-Z a-z 0-9 . _ -`, not starting
 *   with `-`, at most 32);
 * - bastions: `[user@]address[:port]`, each part as above;
 * - labels: Kubernetes label keys and values (src/kube/names.ts), and an
 *   `edgeadm.io/site` label a site name (src/sites/site-label.ts);
 * - every other text field (key files, package paths): no control characters.
 */
import { isIP } from 'node:net';
import { labelProblem } from '../../kube/names.js';
import { withSiteLabels } from '../../sites/site-label.js';
import { inventoryError, type InventorySource } from './inventory-error.js';

/** Longest host or group name (a DNS name's bound). */
export const MAX_HOST_NAME_LENGTH = 253;
/** Longest SSH user name (the common POSIX `useradd` bound). */
export const MAX_SSH_USER_LENGTH = 32;

const HOST_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const DNS_LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const SSH_USER = /^[A-Za-z0-9._][A-Za-z0-9._-]*$/;
// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/** Whether `name` is a valid inventory host (or group) name; see the module comment. */
export function isValidHostName(name: string): boolean {
  return name.length <= MAX_HOST_NAME_LENGTH && HOST_NAME.test(name);
}

/** Whether `address` is an IP address or a DNS host name. */
export function isValidAddress(address: string): boolean {
  if (isIP(address) !== 0) return true;
  return address.length <= MAX_HOST_NAME_LENGTH && address.split('.').every((label) => DNS_LABEL.test(label));
}

/** Whether `user` is a POSIX portable user name. */
export function isValidSshUser(user: string): boolean {
  return user.length <= MAX_SSH_USER_LENGTH && SSH_USER.test(user);
}

/** Whether `jump` is `[user@]address[:port]` (IPv6 addresses in brackets). */
export function isValidJump(jump: string): boolean {
  const match = /^(?:([^@]+)@)?(\[[^\]]+\]|[^:@[\]]+)(?::(\d{1,5}))?$/.exec(jump);
  if (!match) return false;
  const [, user, host = '', port] = match;
  if (user !== undefined && !isValidSshUser(user)) return false;
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return false;
  return host.startsWith('[') ? isIP(host.slice(1, -1)) === 6 : isValidAddress(host);
}

/** "host NAME: " for a message about one host's resolved value; nothing for a group-level setting (its path says where). */
function hostPrefix(host: string | undefined): string {
  return host === undefined ? '' : `host ${host}: `;
}

/** Refuses a host or group name outside the safe set, naming where it is written. */
export function checkHostName(name: string, kind: 'host' | 'group', path: string[], source: InventorySource): void {
  if (!isValidHostName(name)) {
    throw inventoryError(
      source,
      path,
      `${kind} name ${JSON.stringify(name)} is not valid: use 1 to ${MAX_HOST_NAME_LENGTH} letters, digits, '.', '_' and '-', starting and ending with a letter or digit`,
      kind === 'host' ? ['A host name that is not an address may carry the address in its own field.'] : [],
    );
  }
}

/** Refuses an address that is neither an IP address nor a DNS name. */
export function checkAddress(host: string | undefined, address: string, path: string[], source: InventorySource): void {
  if (!isValidAddress(address)) {
    throw inventoryError(
      source,
      path,
      `${hostPrefix(host)}address ${JSON.stringify(address)} is neither an IP address nor a DNS name`,
    );
  }
}

/** Refuses an SSH user that is not a POSIX portable user name. */
export function checkSshUser(host: string | undefined, user: string, path: string[], source: InventorySource): void {
  if (!isValidSshUser(user)) {
    throw inventoryError(
      source,
      path,
      `${hostPrefix(host)}SSH user ${JSON.stringify(user)} is not a POSIX user name (letters, digits, '.', '_', '-'; not starting with '-'; at most ${MAX_SSH_USER_LENGTH})`,
    );
  }
}

/** Refuses a bastion that is not `[user@]address[:port]`. */
export function checkJump(host: string | undefined, jump: string, path: string[], source: InventorySource): void {
  if (!isValidJump(jump)) {
    throw inventoryError(
      source,
      path,
      `${hostPrefix(host)}bastion ${JSON.stringify(jump)} is not [user@]address[:port]`,
    );
  }
}

/** Refuses labels that are not Kubernetes label keys and values. */
export function checkLabels(
  host: string | undefined,
  labels: Readonly<Record<string, string>>,
  path: string[],
  source: InventorySource,
): void {
  const problem = labelProblem(labels);
  if (problem !== undefined) throw inventoryError(source, path, `${hostPrefix(host)}${problem}`);
  try {
    withSiteLabels(labels);
  } catch (error) {
    // A site label that is no site name, or that disagrees with the zone: refused with the file's position.
    throw inventoryError(source, path, `${hostPrefix(host)}${(error as Error).message}`);
  }
}

/** Refuses a text field holding a control character (a newline would split output lines). */
export function checkText(value: string, path: string[], source: InventorySource): void {
  if (CONTROL_CHARACTER.test(value)) {
    throw inventoryError(source, path, `${JSON.stringify(value)} holds a control character (a newline, say)`);
  }
}
