/**
 * Ansible YAML inventories, read as they are: groups with `hosts`, `vars` and
 * `children`, under `all` or at the top level, with Ansible's variable
 * precedence: `all` < parent group < child group < host (groups of equal
 * depth merge by name, as Ansible does). The connection variables map onto
 * edgeadm's SSH settings; `edgeadm_role`, `edgeadm_labels`, `edgeadm_edge` and
 * `edgeadm_package` carry what Ansible has no word for. A host in a group
 * named like a control plane (`control_plane`, `control-plane`,
 * `kube_control_plane`, `masters`) is a control-plane host, and
 * `control_plane_endpoint` (on those hosts, their group or `all`) is the
 * control planes' shared address.
 */
import { portField, stringField } from './edgeadm-inventory.js';
import { controlPlaneEndpointField } from './control-plane-endpoint.js';
import { checkAddress, checkHostName, checkJump, checkLabels, checkSshUser } from './host-fields.js';
import { fieldLocation, inventoryError, isMapping, locationOf, type InventorySource } from './inventory-error.js';
import type { FleetHost, FleetInventory, FleetSshSettings, InventoryLocation } from './types.js';

/** Groups whose hosts are control-plane hosts unless `edgeadm_role` says otherwise. */
export const CONTROL_PLANE_GROUPS = new Set(['control_plane', 'control-plane', 'kube_control_plane', 'masters']);

/** The variable that names the control planes' shared address. */
export const CONTROL_PLANE_ENDPOINT_VAR = 'control_plane_endpoint';

/** Groups every host is in implicitly; not reported as the host's groups. */
const IMPLICIT_GROUPS = new Set(['all', 'ungrouped']);
const GROUP_KEYS = new Set(['hosts', 'vars', 'children']);

/** A variable and where it was written. */
interface SourcedValue {
  value: unknown;
  path: string[];
}

interface Group {
  name: string;
  vars: Map<string, SourcedValue>;
  /** Host name to its host-level vars in this group. */
  hosts: Map<string, Map<string, SourcedValue>>;
  parents: Set<string>;
}

/** True when a document looks like an Ansible inventory (groups of hosts/vars/children). */
export function looksLikeAnsibleInventory(document: unknown): boolean {
  if (!isMapping(document)) return false;
  const groups = Object.values(document);
  return (
    groups.length > 0 &&
    groups.every((group) => group === null || (isMapping(group) && Object.keys(group).every((k) => GROUP_KEYS.has(k))))
  );
}

/** Parses an Ansible YAML inventory document (already loaded from YAML). */
export function parseAnsibleInventory(document: unknown, source: InventorySource): FleetInventory {
  if (!isMapping(document)) throw inventoryError(source, [], 'expected a mapping of groups at the top level');
  const groups = new Map<string, Group>();
  const hostOrder: string[] = [];
  /** Where each group and host is first written, for errors about what is missing there. */
  const groupPaths = new Map<string, string[]>();
  const hostPaths = new Map<string, string[]>();
  const groupOf = (name: string): Group => {
    let group = groups.get(name);
    if (!group) {
      group = { name, vars: new Map(), hosts: new Map(), parents: new Set() };
      groups.set(name, group);
    }
    return group;
  };
  const walk = (name: string, body: unknown, path: string[], parent: string | undefined, depth: number): void => {
    if (depth > MAX_GROUP_NESTING) throw inventoryError(source, path, 'groups nest too deeply (a children loop?)');
    checkHostName(name, 'group', path, source);
    const group = groupOf(name);
    if (!groupPaths.has(name)) groupPaths.set(name, path);
    if (parent !== undefined && parent !== name) group.parents.add(parent);
    if (body === null || body === undefined) return;
    if (!isMapping(body)) throw inventoryError(source, path, 'expected a group: a mapping of hosts, vars and children');
    for (const key of Object.keys(body)) {
      if (!GROUP_KEYS.has(key))
        throw inventoryError(source, [...path, key], 'unknown field (expected hosts, vars or children)');
    }
    if (body.vars !== undefined && body.vars !== null) {
      for (const [key, entry] of varsOf(body.vars, [...path, 'vars'], source)) group.vars.set(key, entry);
    }
    if (body.hosts !== undefined && body.hosts !== null) {
      if (!isMapping(body.hosts)) throw inventoryError(source, [...path, 'hosts'], 'expected a mapping of host names');
      for (const [host, vars] of Object.entries(body.hosts)) {
        const hostPath = [...path, 'hosts', host];
        if (/\[.*:.*\]/.test(host))
          throw inventoryError(source, hostPath, 'host ranges are not supported; list the hosts');
        checkHostName(host, 'host', hostPath, source);
        if (!hostOrder.includes(host)) hostOrder.push(host);
        if (!hostPaths.has(host)) hostPaths.set(host, hostPath);
        const own = group.hosts.get(host) ?? new Map<string, SourcedValue>();
        if (vars !== null && vars !== undefined)
          for (const [key, entry] of varsOf(vars, hostPath, source)) own.set(key, entry);
        group.hosts.set(host, own);
      }
    }
    if (body.children !== undefined && body.children !== null) {
      if (!isMapping(body.children))
        throw inventoryError(source, [...path, 'children'], 'expected a mapping of groups');
      for (const [child, childBody] of Object.entries(body.children)) {
        walk(child, childBody, [...path, 'children', child], name, depth + 1);
      }
    }
  };
  for (const [name, body] of Object.entries(document)) walk(name, body, [name], name === 'all' ? undefined : 'all', 0);
  groupOf('all');

  const depthOf = depthFunction(groups);
  const warnings: string[] = [];
  const endpoints: { host: string; value: string; path: string[] }[] = [];
  const hosts = hostOrder.map((name) => {
    const direct = [...groups.values()].filter((group) => group.hosts.has(name));
    const memberOf = new Set<string>(['all']);
    const addAncestors = (group: Group): void => {
      if (memberOf.has(group.name)) return;
      memberOf.add(group.name);
      for (const parent of group.parents) addAncestors(groups.get(parent)!);
    };
    for (const group of direct) addAncestors(group);
    const ordered = [...memberOf]
      .map((group) => groups.get(group)!)
      .sort((a, b) => depthOf(a.name) - depthOf(b.name) || a.name.localeCompare(b.name));
    const vars = new Map<string, SourcedValue>();
    for (const group of ordered) for (const [key, entry] of group.vars) vars.set(key, entry);
    for (const group of ordered) for (const [key, entry] of group.hosts.get(name) ?? []) vars.set(key, entry);
    const host = hostFromVars(name, vars, ordered, hostPaths.get(name)!, source, warnings);
    const endpoint = vars.get(CONTROL_PLANE_ENDPOINT_VAR);
    if (host.role === 'control-plane' && endpoint !== undefined && endpoint.value !== null) {
      endpoints.push({
        host: name,
        value: controlPlaneEndpointField(endpoint.value, endpoint.path, source),
        path: endpoint.path,
      });
    }
    return host;
  });
  if (hosts.length === 0) throw inventoryError(source, [], 'lists no hosts');
  // Control-plane hosts first: fleet runs bring them up before the nodes.
  const sorted = [...hosts.filter((h) => h.role === 'control-plane'), ...hosts.filter((h) => h.role === 'worker')];
  const differing = endpoints.find((entry) => entry.value !== endpoints[0]!.value);
  if (differing !== undefined) {
    throw inventoryError(
      source,
      differing.path,
      `${differing.host} has control-plane endpoint ${differing.value}, ${endpoints[0]!.host} has ${endpoints[0]!.value}: the control planes share one`,
    );
  }
  const firstControlPlane = sorted.find((h) => h.role === 'control-plane');
  return {
    file: source.file,
    format: 'ansible',
    hosts: sorted,
    ...(endpoints[0] === undefined ? {} : { controlPlaneEndpoint: endpoints[0].value }),
    controlPlaneEndpointLocation:
      endpoints[0] === undefined
        ? missingEndpointLocation(firstControlPlane, groupPaths, hostPaths, source)
        : locationOf(source, endpoints[0].path),
    warnings,
  };
}

/** Where `control_plane_endpoint` belongs: the vars of the first control plane's group (or the host). */
function missingEndpointLocation(
  host: FleetHost | undefined,
  groupPaths: Map<string, string[]>,
  hostPaths: Map<string, string[]>,
  source: InventorySource,
): InventoryLocation {
  if (host === undefined) return locationOf(source, ['all', 'vars', CONTROL_PLANE_ENDPOINT_VAR]);
  const group = host.groups.find((name) => CONTROL_PLANE_GROUPS.has(name) && groupPaths.has(name));
  const path = group === undefined ? [...hostPaths.get(host.name)!] : [...groupPaths.get(group)!, 'vars'];
  return locationOf(source, [...path, CONTROL_PLANE_ENDPOINT_VAR]);
}

/** Deepest `children` nesting followed; beyond it the file has a loop. */
export const MAX_GROUP_NESTING = 32;

function varsOf(value: unknown, path: string[], source: InventorySource): Map<string, SourcedValue> {
  if (!isMapping(value)) throw inventoryError(source, path, 'expected a mapping of variables');
  const vars = new Map<string, SourcedValue>();
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry === 'string' && entry.includes('{{')) {
      throw inventoryError(source, [...path, key], 'templates ({{ … }}) are not evaluated by edgeadm; write the value');
    }
    vars.set(key, { value: entry, path: [...path, key] });
  }
  return vars;
}

function depthFunction(groups: Map<string, Group>): (name: string) => number {
  const cache = new Map<string, number>();
  const depth = (name: string, seen: Set<string>): number => {
    const cached = cache.get(name);
    if (cached !== undefined) return cached;
    if (name === 'all' || seen.has(name)) return 0;
    seen.add(name);
    const parents = [...(groups.get(name)?.parents ?? [])];
    const result = parents.length === 0 ? 1 : 1 + Math.max(...parents.map((parent) => depth(parent, seen)));
    cache.set(name, result);
    return result;
  };
  return (name) => depth(name, new Set());
}

function hostFromVars(
  name: string,
  vars: Map<string, SourcedValue>,
  groups: Group[],
  hostPath: string[],
  source: InventorySource,
  warnings: string[],
): FleetHost {
  const get = (...keys: string[]): SourcedValue | undefined => {
    for (const key of keys) {
      const entry = vars.get(key);
      if (entry !== undefined && entry.value !== null) return entry;
    }
    return undefined;
  };
  const text = (...keys: string[]): string | undefined => {
    const entry = get(...keys);
    return entry === undefined ? undefined : stringField(entry.value, entry.path, source);
  };
  const ssh: FleetSshSettings = {};
  const user = text('ansible_user', 'ansible_ssh_user');
  if (user !== undefined) {
    checkSshUser(name, user, get('ansible_user', 'ansible_ssh_user')!.path, source);
    ssh.user = user;
  }
  const port = get('ansible_port', 'ansible_ssh_port');
  if (port !== undefined) ssh.port = portField(port.value, port.path, source);
  const keyFile = text('ansible_ssh_private_key_file', 'ansible_private_key_file');
  if (keyFile !== undefined) ssh.keyFile = keyFile;
  const become = get('ansible_become');
  if (become !== undefined) ssh.become = booleanVar(become, source);
  const jumps: string[] = [];
  for (const key of ['ansible_ssh_common_args', 'ansible_ssh_extra_args']) {
    const entry = get(key);
    if (entry === undefined) continue;
    const parsed = parseSshArgs(stringField(entry.value, entry.path, source));
    for (const jump of parsed.jumps) checkJump(name, jump, entry.path, source);
    jumps.push(...parsed.jumps);
    if (parsed.ignored.length > 0) {
      warnings.push(`${fieldLocation(source, entry.path)}: ignored ssh options ${parsed.ignored.join(' ')}`);
    }
  }
  if (jumps.length > 0) ssh.jumps = jumps;

  const roleVar = get('edgeadm_role');
  let role: FleetHost['role'] = groups.some((group) => CONTROL_PLANE_GROUPS.has(group.name))
    ? 'control-plane'
    : 'worker';
  if (roleVar !== undefined) {
    if (roleVar.value !== 'control-plane' && roleVar.value !== 'worker') {
      throw inventoryError(source, roleVar.path, 'expected control-plane or worker');
    }
    role = roleVar.value;
  }
  const labels: Record<string, string> = {};
  const labelVar = get('edgeadm_labels');
  if (labelVar !== undefined) {
    if (!isMapping(labelVar.value)) throw inventoryError(source, labelVar.path, 'expected a mapping of labels');
    for (const [key, value] of Object.entries(labelVar.value)) labels[key] = String(value);
    checkLabels(name, labels, labelVar.path, source);
  }
  const edge = get('edgeadm_edge');
  const packagePath = text('edgeadm_package');
  const addressVar = get('ansible_host', 'ansible_ssh_host');
  const address = text('ansible_host', 'ansible_ssh_host') ?? name;
  checkAddress(name, address, addressVar?.path ?? hostPath, source);
  return {
    name,
    address,
    ssh,
    role,
    groups: groups.map((group) => group.name).filter((group) => !IMPLICIT_GROUPS.has(group)),
    labels,
    isEdge: edge === undefined ? false : booleanVar(edge, source),
    ...(packagePath === undefined ? {} : { packagePath }),
  };
}

/** Ansible's truthy spellings. */
function booleanVar(entry: SourcedValue, source: InventorySource): boolean {
  if (typeof entry.value === 'boolean') return entry.value;
  const text = String(entry.value).toLowerCase();
  if (['yes', 'true', 'on', '1', 'y'].includes(text)) return true;
  if (['no', 'false', 'off', '0', 'n'].includes(text)) return false;
  throw inventoryError(source, entry.path, 'expected a boolean (true/false, yes/no)');
}

/** The bastions named by `-J`/ProxyJump in ssh arguments, and what else was there. */
export function parseSshArgs(args: string): { jumps: string[]; ignored: string[] } {
  const words = args.match(/'[^']*'|"[^"]*"|\S+/g)?.map((word) => word.replace(/^(['"])(.*)\1$/, '$2')) ?? [];
  const jumps: string[] = [];
  const ignored: string[] = [];
  for (let index = 0; index < words.length; index++) {
    const word = words[index]!;
    let chain: string | undefined;
    if (word === '-J') chain = words[++index];
    else if (word.startsWith('-J')) chain = word.slice(2);
    else if (word === '-o' || word.startsWith('-o')) {
      const option = word === '-o' ? (words[++index] ?? '') : word.slice(2);
      const match = /^ProxyJump[= ]\s*(.+)$/i.exec(option);
      if (match) chain = match[1];
      else ignored.push(`-o ${option}`);
    } else ignored.push(word);
    if (chain !== undefined) jumps.push(...chain.split(',').filter((hop) => hop !== '' && hop !== 'none'));
  }
  return { jumps, ignored };
}
