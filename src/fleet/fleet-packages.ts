/**
 * The install packages of a fleet run, each resolved (downloaded when it is a
 * URL) and verified once on this machine, before any host is reached: a run
 * over 300 hosts reads and hashes the package once, not 300 times, and a
 * corrupted package stops the run before it touches a host.
 */
import { join } from 'node:path';
import { ValidationError } from '../errors.js';
import { resolvePackageSource, type ResolvedPackage } from '../packages/source.js';
import type { FleetHost } from './inventory/types.js';

/** The packages of one run, by source (a path or a URL). */
export class FleetPackages {
  readonly #bySource = new Map<string, Promise<ResolvedPackage>>();
  readonly #cacheDir: string;

  /** `edgeadmHome`: where downloaded packages are cached (under `packages/`). */
  constructor(edgeadmHome: string) {
    this.#cacheDir = join(edgeadmHome, 'packages');
  }

  /** The verified package from `source`; verified on the first call only. */
  resolve(source: string): Promise<ResolvedPackage> {
    let resolved = this.#bySource.get(source);
    if (resolved === undefined) {
      resolved = resolvePackageSource(source, { cacheDir: this.#cacheDir });
      this.#bySource.set(source, resolved);
    }
    return resolved;
  }

  /**
   * Verifies the package of every host up front, and returns each host's
   * package by host name. `fallback` is `--install-pkg-path`, for hosts
   * whose inventory entry names none.
   */
  async forHosts(hosts: FleetHost[], fallback: string | undefined): Promise<Map<string, ResolvedPackage>> {
    const missing = hosts.filter((host) => (host.packagePath ?? fallback) === undefined).map((host) => host.name);
    if (missing.length > 0) {
      throw new ValidationError(`no install package for ${missing.join(', ')}`, {
        code: 'E_NO_PACKAGE',
        hints: ['Pass --install-pkg-path (a file or an http(s) URL), or name a package in the inventory.'],
      });
    }
    const entries = await Promise.all(
      hosts.map(async (host) => [host.name, await this.resolve((host.packagePath ?? fallback)!)] as const),
    );
    return new Map(entries);
  }
}
