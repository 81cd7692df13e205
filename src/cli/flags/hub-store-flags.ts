/**
 * The flags that say where a hub keeps its state (`hub serve`, `hub
 * migrate`): `--store`, the etcd endpoints and TLS files, and the encryption
 * key file. Parsed and checked here, before any I/O to etcd: endpoints must
 * be URLs, every file must exist, the key file must hold keys.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { ValidationError } from '../../errors.js';
import { loadEncryptionKeyFile } from '../../hub/store/etcd/encryption.js';
import { parseEtcdEndpoints } from '../../hub/store/etcd/etcd-client.js';
import type { EtcdStoreOptions } from '../../hub/server/open-store.js';

/** The etcd flags, shared by the commands that reach a hub's etcd. */
export const etcdStoreFlags = {
  'etcd-endpoints': Flags.string({
    summary: 'etcd client URLs, comma-separated (https://10.0.0.1:2379,https://10.0.0.2:2379,…).',
    helpValue: 'URLS',
  }),
  'etcd-cacert': Flags.string({ summary: 'CA certificate (PEM) that signed the etcd serving certificates.' }),
  'etcd-cert': Flags.string({ summary: 'Client certificate (PEM) the hub presents to etcd.', dependsOn: ['etcd-key'] }),
  'etcd-key': Flags.string({ summary: 'Key of --etcd-cert.', dependsOn: ['etcd-cert'] }),
  'etcd-key-prefix': Flags.string({
    summary: 'Key prefix the hub keeps its state under (one etcd can hold several hubs).',
    default: '/edgeadm/hub/',
  }),
  'encryption-key-file': Flags.string({
    summary:
      'Key file that encrypts the secrets the hub keeps in etcd; every replica is given the same file (edgeadm hub encryption-key create FILE).',
  }),
};

/** The values of {@link etcdStoreFlags}. */
export interface EtcdStoreFlagValues {
  'etcd-endpoints'?: string | undefined;
  'etcd-cacert'?: string | undefined;
  'etcd-cert'?: string | undefined;
  'etcd-key'?: string | undefined;
  'etcd-key-prefix'?: string | undefined;
  'encryption-key-file'?: string | undefined;
}

function existingFile(path: string, flag: string): string {
  if (!existsSync(path)) {
    throw new ValidationError(`${flag} ${path} does not exist`, { code: 'E_HUB_ETCD_TLS', hints: [`Check ${flag}.`] });
  }
  return resolve(path);
}

/**
 * Checks the etcd flags and returns the store options.
 *
 * @throws {ValidationError} `E_HUB_STORE_FLAGS`, `E_HUB_ETCD_ENDPOINTS`, `E_HUB_ETCD_TLS`, `E_HUB_ENCRYPTION_KEY_*`.
 */
export function parseEtcdStoreFlags(flags: EtcdStoreFlagValues): EtcdStoreOptions {
  const endpointsText = flags['etcd-endpoints'];
  if (endpointsText === undefined) {
    throw new ValidationError('the etcd store needs --etcd-endpoints', {
      code: 'E_HUB_STORE_FLAGS',
      hints: ['For example --etcd-endpoints https://10.0.0.1:2379,https://10.0.0.2:2379,https://10.0.0.3:2379'],
    });
  }
  const endpoints = parseEtcdEndpoints(endpointsText);
  const prefix = flags['etcd-key-prefix'] ?? '/edgeadm/hub/';
  // At least one named segment: `/` alone is the whole of etcd (another application's keys too, which
  // `hub migrate --force` would delete), and an empty segment is a typo.
  if (!/^\/(?:[^/]+\/)+$/.test(prefix)) {
    throw new ValidationError(
      `--etcd-key-prefix ${JSON.stringify(prefix)} must start and end with / and name at least one segment, without empty ones`,
      { code: 'E_HUB_STORE_FLAGS', hints: ['For example --etcd-key-prefix /edgeadm/hub/ (the default).'] },
    );
  }
  // Read now, so that a missing or malformed key is refused before anything reaches etcd.
  loadEncryptionKeyFile(flags['encryption-key-file']);
  const options: EtcdStoreOptions = {
    endpoints,
    encryptionKeyFile: resolve(flags['encryption-key-file']!),
    keyPrefix: prefix,
  };
  if (flags['etcd-cacert'] !== undefined) options.caFile = existingFile(flags['etcd-cacert'], '--etcd-cacert');
  if (flags['etcd-cert'] !== undefined) options.certFile = existingFile(flags['etcd-cert'], '--etcd-cert');
  if (flags['etcd-key'] !== undefined) options.keyFile = existingFile(flags['etcd-key'], '--etcd-key');
  return options;
}

/**
 * `hub serve`'s store: undefined for SQLite (refusing etcd flags there, which would be silently ignored).
 *
 * @throws {ValidationError} as {@link parseEtcdStoreFlags}, and `E_HUB_STORE_FLAGS`.
 */
export function parseHubStoreFlags(store: string, flags: EtcdStoreFlagValues): EtcdStoreOptions | undefined {
  if (store === 'etcd') return parseEtcdStoreFlags(flags);
  const given = (['etcd-endpoints', 'etcd-cacert', 'etcd-cert', 'etcd-key', 'encryption-key-file'] as const).filter(
    (flag) => flags[flag] !== undefined,
  );
  if (given.length > 0) {
    throw new ValidationError(`--${given[0]} is for --store etcd; this hub uses --store ${store}`, {
      code: 'E_HUB_STORE_FLAGS',
      hints: ['Add --store etcd, or leave the etcd flags out.'],
    });
  }
  return undefined;
}
