/**
 * What makes a hub the same hub on every start and every replica: its CA,
 * its TLS session-ticket key and its admin credential. A hub on SQLite
 * keeps them in its data directory (hub-pki.ts, tls-ticket-keys.ts,
 * admin.yaml); hubs on etcd keep them in the store, encrypted
 * (etcd/etcd-identity.ts), so that every replica serves under one CA and
 * resumes the sessions any replica issued.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { HUB_ADMIN_USER } from './authenticate.js';
import { writeHubConfig } from '../contract/hub-config.js';
import { ensureHubPki, type HubPki } from './hub-pki.js';
import { hashUserToken, newUserToken } from './hub-tokens.js';
import type { HubStore } from '../store/store.js';
import { ensureTlsTicketKey, type TlsTicketKey } from './tls-ticket-keys.js';

/** Where the admin's hub config goes, and what it names. */
export interface AdminConfigTarget {
  /** `<data-dir>/admin.yaml`. */
  path: string;
  /** The URL this replica is reached at. */
  server: string;
  caPem: string;
}

/** The hub's identity, wherever it is kept. */
export interface HubIdentity {
  /** Loads (or, on first start, makes or adopts) the CA and issues this replica's serving certificate for `names`. */
  ensurePki(names: readonly string[]): Promise<HubPki>;
  /** The current session-ticket key (made or rotated when due); `isNew` when it differs from the last one returned. */
  ensureTicketKey(caPin: string): Promise<TlsTicketKey>;
  /**
   * Makes the admin credential on the hub's first start and writes
   * `admin.yaml` where there is none; true when this call made the credential.
   */
  ensureAdmin(target: AdminConfigTarget): Promise<boolean>;
}

/** Options of {@link localHubIdentity}. */
export interface LocalHubIdentityOptions {
  dataDir: string;
  store: HubStore;
  /** A CA to adopt on first start (PEM files). */
  caCertFile?: string;
  caKeyFile?: string;
}

/** The identity of a hub on SQLite: files under its data directory, as always. */
export function localHubIdentity(options: LocalHubIdentityOptions): HubIdentity {
  const pkiDir = join(options.dataDir, 'pki');
  return {
    ensurePki: (names) =>
      ensureHubPki({
        dataDir: options.dataDir,
        names,
        ...(options.caCertFile === undefined ? {} : { caCertFile: options.caCertFile }),
        ...(options.caKeyFile === undefined ? {} : { caKeyFile: options.caKeyFile }),
      }),
    ensureTicketKey: async (caPin) => ensureTlsTicketKey({ pkiDir, caPin }),
    ensureAdmin: async (target) => {
      // admin.yaml is written on the first start only: its absence is what marks one.
      if (existsSync(target.path)) return false;
      const token = newUserToken();
      await options.store.putUser({
        name: HUB_ADMIN_USER,
        tokenHash: hashUserToken(token),
        clustersSelector: '',
        groups: [],
        isAdmin: true,
        createdAt: new Date().toISOString(),
      });
      writeHubConfig(target.path, { server: target.server, caPem: target.caPem, user: HUB_ADMIN_USER, token });
      return true;
    },
  };
}
