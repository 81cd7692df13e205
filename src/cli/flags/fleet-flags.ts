/**
 * The flags every fleet command shares (`-i`, `--limit`, the rollout knobs,
 * `--resume` and the SSH flags), and their translation into fleet options.
 */
import { Flags } from '@oclif/core';
import { trustedKeyFlags } from '../package-trust-flags.js';
import { hostConnectOptionsFromFlags, sshFlags, type SshFlagContext, type SshFlagValues } from './ssh-flags.js';
import type { HostConnectOptions } from '../../hosts/connect.js';
import type { FleetRunInput } from '../../fleet/fleet-request.js';

/** Hosts at once when `--concurrency` is not given. */
export const DEFAULT_FLEET_CONCURRENCY = 10;

const { host: _host, ...fleetSshFlags } = sshFlags;

/**
 * The smallest useful edgeadm inventory, shown in --help. Flow style, no
 * indentation: oclif's help trims every line, so a block-style example would
 * lose the indentation that its YAML depends on (the test parses what --help prints).
 */
const INVENTORY_EXAMPLE = [
  'An edgeadm inventory (Ansible YAML inventories work as they are; see docs/guides/fleet.md):',
  '',
  'kind: FleetInventory',
  'package: ./edge-k3s-v1.30.4-amd64.tar.gz',
  'ssh: { user: root, keyFile: ~/.ssh/fleet }',
  'controlPlane: { hosts: { cp1: { address: 10.0.0.10 } } }',
  'nodeGroups: { stores: { edge: true, hosts: { store-001: { address: 10.1.0.1 } } } }',
].join('\n');

/** `-i` and `--limit`: which hosts. */
export const inventoryFlags = {
  inventory: Flags.string({
    char: 'i',
    summary: 'Inventory file: edgeadm YAML (kind: FleetInventory) or an Ansible YAML inventory.',
    description: INVENTORY_EXAMPLE,
    required: true,
  }),
  limit: Flags.string({
    summary: 'Only these hosts: names, groups or globs (store-*), comma-separated; !name excludes.',
  }),
};

/** The rollout flags, and the SSH flags (less --host: the inventory names the hosts). */
export const rolloutFlags = {
  concurrency: Flags.integer({
    summary: 'Hosts worked on at once.',
    min: 1,
    default: DEFAULT_FLEET_CONCURRENCY,
  }),
  canary: Flags.integer({ summary: 'Size of the first wave; the rest waits for it.', min: 0 }),
  'wave-size': Flags.string({ summary: 'Hosts per wave after the canary: N or P% of the hosts.' }),
  'max-failures': Flags.string({
    summary: 'Failed hosts tolerated (N or P%); once exceeded no new host starts. Default: no limit.',
  }),
  retries: Flags.integer({ summary: 'Extra attempts per failed host, with exponential backoff.', min: 0, default: 0 }),
  resume: Flags.string({
    summary: 'Continue run ID (or "last"): finished hosts are skipped, failed and unstarted ones run again.',
  }),
  ...fleetSshFlags,
};

/** The install package and distribution of the hosts that join (`fleet join`, `fleet up`). */
export const fleetPackageFlags = {
  'install-pkg-path': Flags.string({ summary: 'The install package for hosts whose inventory entry names none.' }),
  ...trustedKeyFlags,
  distribution: Flags.string({
    summary: 'k3s or kubeadm; default: the one the install packages are for (they must agree with it).',
  }),
};

/** The parsed values of {@link rolloutFlags}. */
export interface RolloutFlagValues extends SshFlagValues {
  concurrency: number;
  canary?: number | undefined;
  'wave-size'?: string | undefined;
  'max-failures'?: string | undefined;
  retries: number;
}

/** The parsed values of {@link inventoryFlags} and {@link rolloutFlags}. */
export interface FleetRunFlagValues extends RolloutFlagValues {
  inventory: string;
  limit?: string | undefined;
  resume?: string | undefined;
}

/** What every fleet run is given, from the flags (parseFleetRunRequest checks it). */
export function fleetRunInput(flags: FleetRunFlagValues): FleetRunInput {
  return {
    inventory: flags.inventory,
    limit: flags.limit,
    resume: flags.resume,
    concurrency: flags.concurrency,
    canary: flags.canary,
    waveSize: flags['wave-size'],
    maxFailures: flags['max-failures'],
    retries: flags.retries,
  };
}

/** Connection settings for every host from the SSH flags; the inventory's per-host settings win over them. */
export function fleetConnectOptionsFromFlags(
  flags: SshFlagValues,
  context: SshFlagContext,
): Omit<HostConnectOptions, 'host'> {
  // The shared translation reads secrets and refuses SSH flags without a host;
  // in a fleet the inventory names the hosts, so it is given a stand-in one.
  const { host: _standIn, ...options } = hostConnectOptionsFromFlags({ ...flags, host: 'inventory' }, context);
  return options;
}
