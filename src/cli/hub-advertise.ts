/**
 * What `hub serve` warns about the address it advertises: the address in
 * admin.yaml, in user configs and in printed `register-cloud` commands.
 * Pure.
 */

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
