/**
 * What `hub serve` says about the address it advertises: the address in
 * admin.yaml, in user configs and in printed `register-cloud` commands.
 * {@link advertiseWarnings} is pure; {@link reconcileAdminServer} also puts
 * a new `--advertise-address` into admin.yaml.
 */
import { loadHubConfig, writeHubConfig } from '../hub/contract/hub-config.js';

/** What the warnings are made from. */
export interface AdvertiseFacts {
  /** `--listen`. */
  listen: string;
  /** `--advertise-address`, if given. */
  advertiseAddress?: string;
  /** The URL the hub advertises (`https://host:port`). */
  url: string;
  /** The `server:` of the admin config in the data directory. */
  adminServer?: string;
}

const UNSPECIFIED_HOSTS = new Set(['0.0.0.0', '::', '[::]', '']);

/** The warnings for people, none when the hub is reachable as it advertises itself. */
export function advertiseWarnings(facts: AdvertiseFacts): string[] {
  const warnings: string[] = [];
  const listenHost = facts.listen.slice(0, facts.listen.lastIndexOf(':'));
  if (facts.advertiseAddress === undefined && UNSPECIFIED_HOSTS.has(listenHost)) {
    warnings.push(
      `the hub listens on every address but advertises ${facts.url}, which only this machine reaches: pass --advertise-address with the name or address agents and users reach it by (it goes into admin.yaml, user configs and the register-cloud command hub token create prints)`,
    );
  }
  if (facts.adminServer !== undefined && facts.adminServer !== facts.url) {
    warnings.push(
      `admin.yaml names the server ${facts.adminServer} (from an earlier start), not ${facts.url}: edit its server: line, and hand out user configs again`,
    );
  }
  return warnings;
}

/** What {@link reconcileAdminServer} works on. */
export interface AdminServerOptions {
  adminConfigPath: string;
  listen: string;
  advertiseAddress?: string;
  url: string;
  /** Replicas on etcd share one admin credential while each advertises itself: admin.yaml is left alone. */
  isSharedStore: boolean;
}

/**
 * Points admin.yaml at the advertised URL when `--advertise-address` is
 * given and admin.yaml still names another server (written at an earlier
 * start, before the flag); returns what to tell the operator: `info` lines
 * and `warnings`.
 */
export function reconcileAdminServer(options: AdminServerOptions): { info: string[]; warnings: string[] } {
  let admin;
  try {
    admin = loadHubConfig(options.adminConfigPath);
  } catch {
    admin = undefined;
  }
  const info: string[] = [];
  if (
    admin !== undefined &&
    !options.isSharedStore &&
    options.advertiseAddress !== undefined &&
    admin.server !== options.url
  ) {
    writeHubConfig(options.adminConfigPath, { ...admin, server: options.url });
    info.push(`admin config now names ${options.url} (it named ${admin.server}); hand out user configs again`);
    admin = { ...admin, server: options.url };
  }
  const warnings = advertiseWarnings({
    listen: options.listen,
    ...(options.advertiseAddress === undefined ? {} : { advertiseAddress: options.advertiseAddress }),
    url: options.url,
    ...(admin === undefined || options.isSharedStore ? {} : { adminServer: admin.server }),
  });
  return { info, warnings };
}
