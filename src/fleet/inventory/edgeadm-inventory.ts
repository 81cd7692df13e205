/**
 * edgeadm's own inventory format:
 *
 * ```yaml
 * kind: FleetInventory
 * package: ./edgeadm-k8s-v1.30.tar.zst
 * trustedKeys: [./prod-signing.pub]      # the packages must be signed by one of these
 * ssh: { user: root, keyFile: ~/.ssh/fleet, jump: ops@bastion }
 * controlPlane:
 *   endpoint: k8s.example.internal:6443   # needed with more than one host
 *   hosts:
 *     cp1: { address: 10.0.0.10 }
 *     cp2: { address: 10.0.0.11 }
 *     cp3: { address: 10.0.0.12 }
 * nodeGroups:
 *   stores:
 *     edge: true
 *     labels: { tier: store }
 *     ssh: { port: 2222 }
 *     hosts:
 *       store-001: { address: 10.1.0.1, labels: { city: lyon } }
 * ```
 *
 * Settings are inherited top level → group → host, the most specific winning.
 * The first control-plane host is the one `fleet up` inits; the others join it.
 */
import { controlPlaneEndpointField } from './control-plane-endpoint.js';
import { checkAddress, checkHostName, checkJump, checkLabels, checkSshUser, checkText } from './host-fields.js';
import { inventoryError, isMapping, locationOf, type InventorySource } from './inventory-error.js';
import type { FleetHost, FleetInventory, FleetRole, FleetSshSettings } from './types.js';

/** The `kind` that marks an edgeadm inventory. */
export const EDGEADM_INVENTORY_KIND = 'FleetInventory';

const TOP_KEYS = new Set([
  'kind',
  'apiVersion',
  'package',
  'trustedKeys',
  'ssh',
  'labels',
  'edge',
  'controlPlane',
  'nodeGroups',
]);
const GROUP_KEYS = new Set(['package', 'ssh', 'labels', 'edge', 'hosts']);
const CONTROL_PLANE_KEYS = new Set([...GROUP_KEYS, 'endpoint']);
const HOST_KEYS = new Set(['address', 'package', 'ssh', 'labels', 'edge']);
const SSH_KEYS = new Set(['user', 'port', 'keyFile', 'jump', 'become']);

/** Settings a level can set, before inheritance. */
interface LevelSettings {
  ssh: FleetSshSettings;
  labels: Record<string, string>;
  isEdge?: boolean;
  packagePath?: string;
}

/** Parses an edgeadm inventory document (already loaded from YAML). */
export function parseEdgeadmInventory(document: unknown, source: InventorySource): FleetInventory {
  if (!isMapping(document)) throw inventoryError(source, [], 'expected a mapping at the top level');
  checkKeys(document, TOP_KEYS, [], source);
  if (document.kind !== undefined && document.kind !== EDGEADM_INVENTORY_KIND) {
    throw inventoryError(source, ['kind'], `must be ${EDGEADM_INVENTORY_KIND}`);
  }
  const top = levelSettings(document, [], source);
  const trustedKeys = trustedKeysField(document.trustedKeys, source);
  const hosts: FleetHost[] = [];
  const seen = new Map<string, string>();
  const addGroup = (group: unknown, path: string[], role: FleetRole, groupName: string | undefined): void => {
    if (!isMapping(group)) throw inventoryError(source, path, 'expected a mapping');
    checkKeys(group, role === 'control-plane' ? CONTROL_PLANE_KEYS : GROUP_KEYS, path, source);
    const settings = merge(top, levelSettings(group, path, source));
    if (!isMapping(group.hosts)) throw inventoryError(source, [...path, 'hosts'], 'expected a mapping of host names');
    for (const [name, value] of Object.entries(group.hosts)) {
      const hostPath = [...path, 'hosts', name];
      checkHostName(name, 'host', hostPath, source);
      if (seen.has(name)) throw inventoryError(source, hostPath, `host ${name} is already listed in ${seen.get(name)}`);
      seen.set(name, path.join('.'));
      const body = value ?? {};
      if (!isMapping(body)) throw inventoryError(source, hostPath, 'expected a mapping (or nothing)');
      checkKeys(body, HOST_KEYS, hostPath, source);
      const own = merge(settings, levelSettings(body, hostPath, source));
      const addressPath = body.address === undefined ? hostPath : [...hostPath, 'address'];
      const address = body.address === undefined ? name : stringField(body.address, addressPath, source);
      checkAddress(name, address, addressPath, source);
      hosts.push({
        name,
        address,
        ssh: own.ssh,
        role,
        groups: groupName === undefined ? ['control-plane'] : [groupName],
        labels: own.labels,
        isEdge: own.isEdge ?? false,
        ...(own.packagePath === undefined ? {} : { packagePath: own.packagePath }),
      });
    }
  };
  if (document.controlPlane !== undefined)
    addGroup(document.controlPlane, ['controlPlane'], 'control-plane', undefined);
  if (document.nodeGroups !== undefined) {
    if (!isMapping(document.nodeGroups)) throw inventoryError(source, ['nodeGroups'], 'expected a mapping of groups');
    for (const [name, group] of Object.entries(document.nodeGroups)) {
      checkHostName(name, 'group', ['nodeGroups', name], source);
      addGroup(group, ['nodeGroups', name], 'worker', name);
    }
  }
  if (hosts.length === 0) throw inventoryError(source, [], 'lists no hosts (controlPlane.hosts or nodeGroups)');
  const endpointPath = ['controlPlane', 'endpoint'];
  const endpoint = isMapping(document.controlPlane) ? document.controlPlane.endpoint : undefined;
  return {
    file: source.file,
    format: 'edgeadm',
    hosts,
    ...(endpoint === undefined
      ? {}
      : { controlPlaneEndpoint: controlPlaneEndpointField(endpoint, endpointPath, source) }),
    controlPlaneEndpointLocation: locationOf(source, endpointPath),
    warnings: [],
    ...(trustedKeys === undefined ? {} : { trustedKeys }),
  };
}

/** `trustedKeys`: a non-empty list of public key files (PEM), read when the run starts. */
function trustedKeysField(value: unknown, source: InventorySource): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0) {
    throw inventoryError(source, ['trustedKeys'], 'expected a list of public key files (PEM)');
  }
  return value.map((item, index) => {
    const file = stringField(item, ['trustedKeys', String(index)], source);
    checkText(file, ['trustedKeys', String(index)], source);
    return file;
  });
}

function checkKeys(
  value: Record<string, unknown>,
  allowed: Set<string>,
  path: string[],
  source: InventorySource,
): void {
  for (const key of Object.keys(value)) {
    if (!allowed.has(key)) {
      throw inventoryError(source, [...path, key], `unknown field (expected one of: ${[...allowed].join(', ')})`);
    }
  }
}

function levelSettings(value: Record<string, unknown>, path: string[], source: InventorySource): LevelSettings {
  const settings: LevelSettings = { ssh: {}, labels: {} };
  if (value.ssh !== undefined) settings.ssh = sshSettings(value.ssh, [...path, 'ssh'], source);
  if (value.labels !== undefined) settings.labels = labels(value.labels, [...path, 'labels'], source);
  if (value.edge !== undefined) {
    if (typeof value.edge !== 'boolean') throw inventoryError(source, [...path, 'edge'], 'expected true or false');
    settings.isEdge = value.edge;
  }
  if (value.package !== undefined) settings.packagePath = stringField(value.package, [...path, 'package'], source);
  return settings;
}

function sshSettings(value: unknown, path: string[], source: InventorySource): FleetSshSettings {
  if (!isMapping(value)) throw inventoryError(source, path, 'expected a mapping');
  checkKeys(value, SSH_KEYS, path, source);
  const ssh: FleetSshSettings = {};
  if (value.user !== undefined) {
    ssh.user = stringField(value.user, [...path, 'user'], source);
    checkSshUser(undefined, ssh.user, [...path, 'user'], source);
  }
  if (value.port !== undefined) ssh.port = portField(value.port, [...path, 'port'], source);
  if (value.keyFile !== undefined) ssh.keyFile = stringField(value.keyFile, [...path, 'keyFile'], source);
  if (value.jump !== undefined) {
    const jumps = Array.isArray(value.jump) ? value.jump : [value.jump];
    ssh.jumps = jumps.map((jump) => {
      const text = stringField(jump, [...path, 'jump'], source);
      checkJump(undefined, text, [...path, 'jump'], source);
      return text;
    });
  }
  if (value.become !== undefined) {
    if (typeof value.become !== 'boolean') throw inventoryError(source, [...path, 'become'], 'expected true or false');
    ssh.become = value.become;
  }
  return ssh;
}

function labels(value: unknown, path: string[], source: InventorySource): Record<string, string> {
  if (!isMapping(value)) throw inventoryError(source, path, 'expected a mapping of label names to values');
  const result: Record<string, string> = {};
  for (const [key, label] of Object.entries(value)) {
    if (!['string', 'number', 'boolean'].includes(typeof label)) {
      throw inventoryError(source, [...path, key], 'expected a string value');
    }
    result[key] = String(label);
  }
  checkLabels(undefined, result, path, source);
  return result;
}

function merge(base: LevelSettings, over: LevelSettings): LevelSettings {
  const isEdge = over.isEdge ?? base.isEdge;
  const packagePath = over.packagePath ?? base.packagePath;
  return {
    ssh: { ...base.ssh, ...over.ssh },
    labels: { ...base.labels, ...over.labels },
    ...(isEdge === undefined ? {} : { isEdge }),
    ...(packagePath === undefined ? {} : { packagePath }),
  };
}

/** A non-empty string field. */
export function stringField(value: unknown, path: string[], source: InventorySource): string {
  if (typeof value === 'number') return String(value);
  if (typeof value !== 'string' || value.trim() === '')
    throw inventoryError(source, path, 'expected a non-empty string');
  checkText(value, path, source);
  return value;
}

/** A TCP port field (a number or a numeric string). */
export function portField(value: unknown, path: string[], source: InventorySource): number {
  const port = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw inventoryError(source, path, 'expected a port number between 1 and 65535');
  }
  return port;
}
