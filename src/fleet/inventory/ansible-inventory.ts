/**
 * Ansible inventories resolved as Ansible resolves them, whatever file they
 * came from (YAML, INI, group_vars/ and host_vars/). The readers fill an
 * {@link AnsibleInventoryBuilder} as Ansible's InventoryData is filled
 * (groups, children, hosts and variables in the order they are written); then
 * {@link resolveAnsibleInventory} flattens each host's variables with
 * Ansible's precedence (VariableManager.get_vars, ansible-core 2.14):
 *
 * 1. the `all` group's inventory vars;
 * 2. the host's other groups' inventory vars, sorted by (depth, then
 *    `ansible_group_priority`, then name, compared as Python compares text);
 * 3. group_vars/all, then group_vars/GROUP in that same order;
 * 4. the host's inventory vars: one set per host, so a host written in
 *    several groups keeps the value written last;
 * 5. host_vars/HOST.
 *
 * The connection variables map onto edgeadm's SSH settings as Ansible's ssh
 * plugin reads them: `ansible_ssh_host`, `ansible_ssh_port` and
 * `ansible_ssh_user` win over `ansible_host`, `ansible_port` and
 * `ansible_user`. `edgeadm_role`, `edgeadm_labels`, `edgeadm_edge` and
 * `edgeadm_package` carry what Ansible has no word for. A host in a group
 * named like a control plane (`control_plane`, `control-plane`,
 * `kube_control_plane`, `masters`) is a control-plane host, and
 * `control_plane_endpoint` is the control planes' shared address.
 *
 * Pure: no I/O.
 */
import { ValidationError } from '../../errors.js';
import { VAULT_HINTS, VaultValue } from './ansible-yaml.js';
import { portField, stringField } from './edgeadm-inventory.js';
import { controlPlaneEndpointField } from './control-plane-endpoint.js';
import { checkAddress, checkJump, checkLabels, checkSshUser } from './host-fields.js';
import { unknownAnsibleVariable } from './ansible-variables.js';
import { fieldLocation, inventoryError, isMapping, locationOf, type InventorySource } from './inventory-error.js';
import { lineOf } from './line-map.js';
import type { FleetHost, FleetInventory, FleetSshSettings, InventoryLocation } from './types.js';

/** Groups whose hosts are control-plane hosts unless `edgeadm_role` says otherwise. */
export const CONTROL_PLANE_GROUPS = new Set(['control_plane', 'control-plane', 'kube_control_plane', 'masters']);

/** The variable that names the control planes' shared address. */
export const CONTROL_PLANE_ENDPOINT_VAR = 'control_plane_endpoint';

/** Groups every host is in implicitly; not reported as the host's groups. */
const IMPLICIT_GROUPS = new Set(['all', 'ungrouped']);

/** Deepest `children` nesting followed; beyond it the file has a loop. */
export const MAX_GROUP_NESTING = 32;

/** A variable, and where it was written. */
export interface SourcedValue {
  value: unknown;
  path: string[];
  source: InventorySource;
}

/** A group as Ansible holds it. */
interface AnsibleGroup {
  name: string;
  vars: Map<string, SourcedValue>;
  children: string[];
  parents: string[];
  /** `ansible_group_priority` (Ansible's default is 1). */
  priority: number;
  /** Where the group is first written. */
  path: string[];
  source: InventorySource;
}

/** A host as Ansible holds it: one set of variables, whatever group wrote them. */
interface AnsibleHost {
  name: string;
  vars: Map<string, SourcedValue>;
  /** The groups it was listed in directly. */
  groups: string[];
  path: string[];
  source: InventorySource;
}

/** The variables of one group_vars/ or host_vars/ file, already parsed, in Ansible's file order. */
export interface AnsibleVarsFile {
  /** A mapping of variables (or null for an empty file). */
  document: unknown;
  source: InventorySource;
}

/** group_vars/ and host_vars/ beside the inventory, by group or host name. */
export interface AnsibleVarsFiles {
  groupVars: ReadonlyMap<string, AnsibleVarsFile[]>;
  hostVars: ReadonlyMap<string, AnsibleVarsFile[]>;
}

/** No group_vars/ and no host_vars/. */
export const NO_VARS_FILES: AnsibleVarsFiles = { groupVars: new Map(), hostVars: new Map() };

/**
 * An inventory being read, filled as Ansible's InventoryData is: `all` and
 * `ungrouped` exist from the start, a host keeps one set of variables and the
 * port of the first pattern that named it.
 */
export class AnsibleInventoryBuilder {
  readonly groups = new Map<string, AnsibleGroup>();
  readonly hosts = new Map<string, AnsibleHost>();

  private readonly source: InventorySource;

  constructor(source: InventorySource) {
    this.source = source;
    this.addGroup('all', [], source);
    this.addGroup('ungrouped', [], source);
    this.addChild('all', 'ungrouped', [], source);
  }

  addGroup(name: string, path: string[], source: InventorySource): void {
    if (!this.groups.has(name)) {
      this.groups.set(name, { name, vars: new Map(), children: [], parents: [], priority: 1, path, source });
    }
  }

  /** Makes `child` a child of `parent`; a loop is refused, as Ansible refuses it. */
  addChild(parent: string, child: string, path: string[], source: InventorySource): void {
    const parentGroup = this.groups.get(parent)!;
    const childGroup = this.groups.get(child)!;
    if (parent === child || this.ancestorsOf(parent).has(child)) {
      throw inventoryError(source, path, `group ${child} as a child of ${parent} makes a loop of groups`);
    }
    if (!parentGroup.children.includes(child)) parentGroup.children.push(child);
    if (!childGroup.parents.includes(parent)) childGroup.parents.push(parent);
  }

  /** Adds `name` to `group`; `port` (from `host:port`) only counts the first time the host is named. */
  addHost(name: string, group: string, port: number | undefined, path: string[], source: InventorySource): void {
    let host = this.hosts.get(name);
    if (host === undefined) {
      host = { name, vars: new Map(), groups: [], path, source };
      this.hosts.set(name, host);
      if (port !== undefined) host.vars.set('ansible_port', { value: port, path, source });
    }
    if (!host.groups.includes(group)) host.groups.push(group);
  }

  setGroupVar(group: string, key: string, entry: SourcedValue): void {
    const target = this.groups.get(group)!;
    if (key === 'ansible_group_priority') {
      target.priority = groupPriority(entry);
      return;
    }
    target.vars.set(key, entry);
  }

  setHostVar(host: string, key: string, entry: SourcedValue): void {
    this.hosts.get(host)!.vars.set(key, entry);
  }

  /** Every group above `name`. */
  ancestorsOf(name: string): Set<string> {
    const seen = new Set<string>();
    const visit = (group: string): void => {
      for (const parent of this.groups.get(group)?.parents ?? []) {
        if (seen.has(parent)) continue;
        seen.add(parent);
        visit(parent);
      }
    };
    visit(name);
    return seen;
  }

  /** The builder's own source (the inventory file). */
  get inventorySource(): InventorySource {
    return this.source;
  }
}

/** `ansible_group_priority` is Python's int() of the value. */
function groupPriority(entry: SourcedValue): number {
  const { value } = entry;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'string' && /^\s*[+-]?\d+\s*$/.test(value)) return Number(value);
  throw inventoryError(entry.source, entry.path, 'ansible_group_priority must be an integer');
}

/**
 * Flattens a filled builder into edgeadm's inventory: each host with its
 * variables resolved by Ansible's precedence (see the module comment).
 */
export function resolveAnsibleInventory(
  builder: AnsibleInventoryBuilder,
  varsFiles: AnsibleVarsFiles = NO_VARS_FILES,
): FleetInventory {
  const source = builder.inventorySource;
  const { groups } = builder;
  // Groups no one lists as a child are children of `all`; hosts in no group are `ungrouped`.
  for (const group of groups.values()) {
    if (group.name !== 'all' && group.parents.length === 0) builder.addChild('all', group.name, group.path, source);
  }
  for (const host of builder.hosts.values()) {
    if (host.groups.every((group) => IMPLICIT_GROUPS.has(group)) && !host.groups.includes('ungrouped'))
      host.groups.push('ungrouped');
    if (host.groups.some((group) => !IMPLICIT_GROUPS.has(group)))
      host.groups = host.groups.filter((group) => group !== 'ungrouped');
  }
  const depthOf = depthFunction(groups);
  const warnings: string[] = [];
  warnUnknownVariables(builder, varsFiles, warnings);
  const fileVars = (files: AnsibleVarsFile[] | undefined): Map<string, SourcedValue> => {
    const vars = new Map<string, SourcedValue>();
    for (const file of files ?? []) {
      if (file.document === null || file.document === undefined) continue;
      if (!isMapping(file.document)) throw inventoryError(file.source, [], 'expected a mapping of variables');
      for (const [key, value] of Object.entries(file.document))
        vars.set(key, { value, path: [key], source: file.source });
    }
    return vars;
  };

  const endpoints: { host: string; value: string; entry: SourcedValue }[] = [];
  const hosts = [...builder.hosts.values()].map((host) => {
    const memberOf = new Set<string>();
    for (const group of host.groups) {
      memberOf.add(group);
      for (const ancestor of builder.ancestorsOf(group)) memberOf.add(ancestor);
    }
    memberOf.delete('all');
    const ordered = sortGroups(
      [...memberOf].map((name) => groups.get(name)!),
      depthOf,
    );
    const vars = new Map<string, SourcedValue>();
    const apply = (from: Map<string, SourcedValue>): void => {
      for (const [key, entry] of from) vars.set(key, entry);
    };
    apply(groups.get('all')!.vars);
    for (const group of ordered) apply(group.vars);
    apply(fileVars(varsFiles.groupVars.get('all')));
    for (const group of ordered) apply(fileVars(varsFiles.groupVars.get(group.name)));
    apply(host.vars);
    apply(fileVars(varsFiles.hostVars.get(host.name)));
    const fleetHost = hostFromVars(host, vars, ordered, warnings);
    const endpoint = vars.get(CONTROL_PLANE_ENDPOINT_VAR);
    if (fleetHost.role === 'control-plane' && endpoint !== undefined && endpoint.value !== null) {
      const value = controlPlaneEndpointField(usable(endpoint), endpoint.path, endpoint.source);
      endpoints.push({ host: host.name, value, entry: endpoint });
    }
    return fleetHost;
  });
  if (hosts.length === 0) throw inventoryError(source, [], 'lists no hosts');
  // Control-plane hosts first: fleet runs bring them up before the nodes.
  const sorted = [...hosts.filter((h) => h.role === 'control-plane'), ...hosts.filter((h) => h.role === 'worker')];
  const differing = endpoints.find((entry) => entry.value !== endpoints[0]!.value);
  if (differing !== undefined) {
    throw inventoryError(
      differing.entry.source,
      differing.entry.path,
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
        ? missingEndpointLocation(firstControlPlane, builder)
        : locationOf(endpoints[0].entry.source, endpoints[0].entry.path),
    warnings: [...new Set(warnings)],
  };
}

/** Ansible's sort_groups: depth, then priority, then name (by code point, as Python compares text). */
function sortGroups(list: AnsibleGroup[], depthOf: (name: string) => number): AnsibleGroup[] {
  return list.sort(
    (a, b) =>
      depthOf(a.name) - depthOf(b.name) || a.priority - b.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
}

/** A group's depth: its longest path from `all`, as Ansible tracks it. */
function depthFunction(groups: Map<string, AnsibleGroup>): (name: string) => number {
  const cache = new Map<string, number>();
  const depth = (name: string): number => {
    const cached = cache.get(name);
    if (cached !== undefined) return cached;
    const parents = groups.get(name)?.parents ?? [];
    const result = name === 'all' || parents.length === 0 ? 0 : 1 + Math.max(...parents.map(depth));
    cache.set(name, result);
    return result;
  };
  return depth;
}

/** Where `control_plane_endpoint` belongs: the vars of the first control plane's group (or the host). */
function missingEndpointLocation(host: FleetHost | undefined, builder: AnsibleInventoryBuilder): InventoryLocation {
  if (host === undefined) return locationOf(builder.inventorySource, ['all', 'vars', CONTROL_PLANE_ENDPOINT_VAR]);
  const group = host.groups
    .map((name) => builder.groups.get(name)!)
    .find((candidate) => CONTROL_PLANE_GROUPS.has(candidate.name) && candidate.path.length > 0);
  if (group !== undefined) return locationOf(group.source, [...group.path, 'vars', CONTROL_PLANE_ENDPOINT_VAR]);
  const written = builder.hosts.get(host.name)!;
  return locationOf(written.source, [...written.path, CONTROL_PLANE_ENDPOINT_VAR]);
}

/** Warns once per place about an `ansible_*` name Ansible does not know (a typo, most often). */
function warnUnknownVariables(builder: AnsibleInventoryBuilder, varsFiles: AnsibleVarsFiles, warnings: string[]): void {
  const check = (key: string, source: InventorySource, path: string[]): void => {
    const problem = unknownAnsibleVariable(key);
    if (problem !== undefined) warnings.push(`${fieldLocation(source, path)}: ${problem}`);
  };
  for (const group of builder.groups.values())
    for (const [key, entry] of group.vars) check(key, entry.source, entry.path);
  for (const host of builder.hosts.values()) for (const [key, entry] of host.vars) check(key, entry.source, entry.path);
  for (const files of [...varsFiles.groupVars.values(), ...varsFiles.hostVars.values()]) {
    for (const file of files) {
      if (isMapping(file.document)) for (const key of Object.keys(file.document)) check(key, file.source, [key]);
    }
  }
}

/**
 * The value of a variable edgeadm acts on: templates and vault values are
 * refused here, where they matter, and nowhere else (an inventory may carry
 * templates for its playbooks).
 */
function usable(entry: SourcedValue): unknown {
  const { value } = entry;
  if (value instanceof VaultValue) {
    throw new ValidationError(
      `${fieldLocation(entry.source, entry.path)}: is encrypted with Ansible Vault (!vault), which edgeadm does not decrypt`,
      {
        code: 'E_INVENTORY_VAULT',
        hints: VAULT_HINTS,
        details: { file: entry.source.file, field: entry.path.join('.') },
      },
    );
  }
  if (typeof value === 'string' && /\{\{|\{%/.test(value)) {
    throw inventoryError(
      entry.source,
      entry.path,
      'holds a Jinja template ({{ … }} or {% … %}), which edgeadm does not evaluate',
      [
        'Write the value itself here,',
        'or let Ansible render it: "ansible-inventory -i FILE --list --yaml --output inventory.yml" keeps templates, so set the plain value in that file.',
      ],
    );
  }
  return value;
}

/** The variable names edgeadm reads, first match winning (the ssh plugin's own order: ansible_ssh_* first). */
const ADDRESS_VARS = ['ansible_ssh_host', 'ansible_host'];
const PORT_VARS = ['ansible_ssh_port', 'ansible_port'];
const USER_VARS = ['ansible_ssh_user', 'ansible_user'];
const KEY_FILE_VARS = ['ansible_ssh_private_key_file', 'ansible_private_key_file'];

function hostFromVars(
  host: AnsibleHost,
  vars: Map<string, SourcedValue>,
  groups: AnsibleGroup[],
  warnings: string[],
): FleetHost {
  const { name } = host;
  const get = (...keys: string[]): SourcedValue | undefined => {
    for (const key of keys) {
      const entry = vars.get(key);
      if (entry !== undefined && entry.value !== null) return entry;
    }
    return undefined;
  };
  const text = (...keys: string[]): string | undefined => {
    const entry = get(...keys);
    return entry === undefined ? undefined : stringField(usable(entry), entry.path, entry.source);
  };
  const ssh: FleetSshSettings = {};
  const user = text(...USER_VARS);
  if (user !== undefined) {
    const entry = get(...USER_VARS)!;
    checkSshUser(name, user, entry.path, entry.source);
    ssh.user = user;
  }
  const port = get(...PORT_VARS);
  if (port !== undefined) {
    ssh.port = ansiblePort(port);
    const written = writtenOctal(port);
    if (written !== undefined) {
      warnings.push(
        `${fieldLocation(port.source, port.path)}: ${written} is the octal number ${ssh.port} in YAML 1.1, as Ansible reads it too; quote it or drop the leading zero if you meant ${Number.parseInt(written.replaceAll('_', ''), 10)}`,
      );
    }
  }
  const keyFile = text(...KEY_FILE_VARS);
  if (keyFile !== undefined) ssh.keyFile = keyFile;
  const become = get('ansible_become');
  if (become !== undefined) ssh.become = booleanVar(become);
  const jumps: string[] = [];
  for (const key of ['ansible_ssh_common_args', 'ansible_ssh_extra_args']) {
    const entry = get(key);
    if (entry === undefined) continue;
    const parsed = parseSshArgs(stringField(usable(entry), entry.path, entry.source));
    for (const jump of parsed.jumps) checkJump(name, jump, entry.path, entry.source);
    jumps.push(...parsed.jumps);
    if (parsed.ignored.length > 0) {
      warnings.push(`${fieldLocation(entry.source, entry.path)}: ignored ssh options ${parsed.ignored.join(' ')}`);
    }
  }
  if (jumps.length > 0) ssh.jumps = jumps;

  const roleVar = get('edgeadm_role');
  let role: FleetHost['role'] = groups.some((group) => CONTROL_PLANE_GROUPS.has(group.name))
    ? 'control-plane'
    : 'worker';
  if (roleVar !== undefined) {
    const value = usable(roleVar);
    if (value !== 'control-plane' && value !== 'worker') {
      throw inventoryError(roleVar.source, roleVar.path, 'expected control-plane or worker');
    }
    role = value;
  }
  const labels: Record<string, string> = {};
  const labelVar = get('edgeadm_labels');
  if (labelVar !== undefined) {
    const value = usable(labelVar);
    if (!isMapping(value)) throw inventoryError(labelVar.source, labelVar.path, 'expected a mapping of labels');
    for (const [key, label] of Object.entries(value)) labels[key] = String(label);
    checkLabels(name, labels, labelVar.path, labelVar.source);
  }
  const edge = get('edgeadm_edge');
  const packagePath = text('edgeadm_package');
  const addressVar = get(...ADDRESS_VARS);
  const address = text(...ADDRESS_VARS) ?? name;
  checkAddress(name, address, addressVar?.path ?? host.path, addressVar?.source ?? host.source);
  return {
    name,
    address,
    ssh,
    role,
    groups: groups.map((group) => group.name).filter((group) => !IMPLICIT_GROUPS.has(group)),
    labels,
    isEdge: edge === undefined ? false : booleanVar(edge),
    ...(packagePath === undefined ? {} : { packagePath }),
  };
}

/**
 * The port as Ansible's ssh plugin takes it: an integer, or text that
 * Python's int() reads in base 10. YAML 1.1 has already made `02222` the
 * octal 1170; that is what Ansible connects to, so edgeadm does the same and
 * says so.
 */
function ansiblePort(entry: SourcedValue): number {
  const value = usable(entry);
  if (typeof value === 'string' && /^\d+$/.test(value)) return portField(Number(value), entry.path, entry.source);
  if (typeof value === 'boolean' || typeof value === 'string') {
    throw inventoryError(
      entry.source,
      entry.path,
      `expected a port number between 1 and 65535, found ${JSON.stringify(value)}`,
    );
  }
  return portField(value, entry.path, entry.source);
}

/** The text of a YAML value written as a leading-zero (octal) integer, when its line shows one. */
function writtenOctal(entry: SourcedValue): string | undefined {
  const line = lineOf(entry.source.lines, entry.path);
  if (entry.source.text === undefined || line === undefined || typeof entry.value !== 'number') return undefined;
  const key = entry.path.at(-1)!;
  const text = entry.source.text.split(/\r?\n/)[line - 1] ?? '';
  const match = new RegExp(`(?:^|[\\s{,])${key}\\s*:\\s*([-+]?0[0-7_]+)\\s*(?:[,}#]|$)`).exec(text);
  return match?.[1];
}

/** Ansible's truthy spellings. */
function booleanVar(entry: SourcedValue): boolean {
  const value = usable(entry);
  if (typeof value === 'boolean') return value;
  const text = String(value).toLowerCase();
  if (['yes', 'true', 'on', '1', 'y'].includes(text)) return true;
  if (['no', 'false', 'off', '0', 'n'].includes(text)) return false;
  throw inventoryError(entry.source, entry.path, 'expected a boolean (true/false, yes/no)');
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
