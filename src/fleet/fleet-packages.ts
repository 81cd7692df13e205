/**
 * The install packages of a fleet run, each resolved (downloaded when it is a
 * URL) and verified once on this machine, before any host is reached: a run
 * over 300 hosts reads and hashes the package once, not 300 times, and a
 * corrupted package stops the run before it touches a host.
 *
 * The packages also say which distribution the run sets up (each manifest
 * names one): an inventory whose `package` / `edgeadm_package` is a kubeadm
 * package brings up kubeadm without `--distribution`. One cluster runs one
 * distribution, so packages for different ones, or a `--distribution` that
 * is not theirs, stop the run before any host is reached.
 *
 * With trusted keys pinned (`--trusted-key`), every package must be signed
 * by one of them (packages/signature.ts), or the run stops there too; with
 * none, the first use of each package says loudly that its origin is not
 * checked.
 */
import { join } from 'node:path';
import { DEFAULT_DISTRIBUTION, distributionFor } from '../cluster/distributions/index.js';
import { ValidationError } from '../errors.js';
import { resolveTrustedPackage } from '../packages/package-trust.js';
import type { ResolvedPackage } from '../packages/source.js';
import type { FleetHost } from './inventory/types.js';

/** Who may sign a run's packages, and where the warning goes when nobody is pinned. */
export interface FleetPackageTrust {
  /** `--trusted-key` files; none: the packages' origin is not checked. */
  trustedKeyFiles?: readonly string[] | undefined;
  warn?: ((line: string) => void) | undefined;
}

/** The packages of one run, by source (a path or a URL). */
export class FleetPackages {
  readonly #bySource = new Map<string, Promise<ResolvedPackage>>();
  readonly #cacheDir: string;
  readonly #trust: FleetPackageTrust;

  /** `edgeadmHome`: where downloaded packages are cached (under `packages/`). */
  constructor(edgeadmHome: string, trust: FleetPackageTrust = {}) {
    this.#cacheDir = join(edgeadmHome, 'packages');
    this.#trust = trust;
  }

  /** The verified package from `source`; verified on the first call only. */
  resolve(source: string): Promise<ResolvedPackage> {
    let resolved = this.#bySource.get(source);
    if (resolved === undefined) {
      resolved = resolveTrustedPackage(source, {
        cacheDir: this.#cacheDir,
        trustedKeyFiles: this.#trust.trustedKeyFiles,
        warn: this.#trust.warn,
      });
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

/** How many host names an error lists per package before it says how many more. */
const NAMED_HOSTS = 5;

function namedHosts(hosts: string[]): string {
  const named = hosts.slice(0, NAMED_HOSTS).join(', ');
  return hosts.length > NAMED_HOSTS ? `${named} and ${hosts.length - NAMED_HOSTS} more` : named;
}

/**
 * The distribution a run sets up: the one its hosts' packages (from
 * {@link FleetPackages.forHosts}) are for. `requested` (`--distribution`)
 * must be theirs; it decides only when there is no package.
 *
 * @throws {ValidationError} `E_PACKAGE_DISTRIBUTION` when the packages are
 * for different distributions, or not for `requested`;
 * `E_DISTRIBUTION_UNKNOWN` for an unknown `requested`.
 */
export function runDistribution(packages: Map<string, ResolvedPackage>, requested: string | undefined): string {
  if (requested !== undefined) distributionFor(requested);
  const hostsBy = new Map<string, string[]>();
  for (const [host, pkg] of packages) {
    const hosts = hostsBy.get(pkg.manifest.distribution) ?? [];
    hosts.push(host);
    hostsBy.set(pkg.manifest.distribution, hosts);
  }
  const found = [...hostsBy.keys()];
  if (found.length > 1) {
    const parts = [...hostsBy].map(([name, hosts]) => `${name} (${namedHosts(hosts)})`);
    throw new ValidationError(`the install packages are for different distributions: ${parts.join('; ')}`, {
      code: 'E_PACKAGE_DISTRIBUTION',
      hints: ['A cluster runs one distribution: give every host a package for the same one.'],
    });
  }
  const [distribution] = found;
  if (distribution === undefined) return requested ?? DEFAULT_DISTRIBUTION;
  if (requested !== undefined && requested !== distribution) {
    throw new ValidationError(
      `--distribution ${requested}, but the install packages of ${namedHosts(hostsBy.get(distribution)!)} are for ${distribution}`,
      {
        code: 'E_PACKAGE_DISTRIBUTION',
        hints: [`Leave --distribution out (the packages say ${distribution}), or use packages for ${requested}.`],
      },
    );
  }
  return distribution;
}
