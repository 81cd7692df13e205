/**
 * The fixture install package that carries the SIMULATED k3s: a real
 * edgeadm package (built with `buildPackage`, so it is verified, uploaded,
 * unpacked and installed by edgeadm's real package code) whose `bin/k3s`
 * is a shell script running ../sim-main.ts with this machine's Node 24. Test
 * hosts share this machine's file system outside their tmpfs mounts, so the
 * script finds both inside a host. The simulated kubeadm's fixture reuses
 * {@link simExecutableScript}.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPackage, type BuiltPackage } from '../../../src/packages/build.js';
import type { Architecture } from '../../../src/packages/manifest.js';
import { SIM_VERSION_ENV } from '../sim-node.js';

/** The marker line in the stand-in, so that nobody mistakes it for k3s. */
export const SIM_K3S_MARKER = 'SIMULATED k3s for edgeadm tests - not k3s';

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MAIN = fileURLToPath(new URL('../sim-main.ts', import.meta.url));

/** The Node 24 binary the stand-in runs with. */
export function simK3sNodePath(): string {
  const pinned = join(REPO_ROOT, 'node_modules', 'node', 'bin', 'node');
  return existsSync(pinned) ? pinned : process.execPath;
}

/**
 * A fixture executable that runs simulated `tool` (see ../sim-main.ts), with
 * its marker line. With `version`, the script exports it as
 * {@link SIM_VERSION_ENV}, and the simulation reports that version (its
 * `--version`, the Node's kubelet version, the API server's `/version`): so
 * a package built for another version carries binaries that report it, as
 * real ones built for it would.
 */
export function simExecutableScript(tool: string, marker: string, readme: string, version?: string): string {
  return [
    '#!/bin/sh',
    `# ${marker}. See ${readme}.`,
    ...(version === undefined ? [] : [`${SIM_VERSION_ENV}='${version}'`, `export ${SIM_VERSION_ENV}`]),
    `exec '${simK3sNodePath()}' '${MAIN}' ${tool} "$@"`,
    '',
  ].join('\n');
}

/** The `bin/k3s` script of the fixture package (reporting `version` when given). */
export function simK3sScript(version?: string): string {
  return simExecutableScript('k3s', SIM_K3S_MARKER, 'test/support/sim-k3s/README.md', version);
}

/** A Kubernetes version as a fixture may name it: `v1.31.2` or k3s's `v1.31.2+k3s1`. */
const FIXTURE_VERSION = /^v\d+\.\d+\.\d+(?:\+k3s\d+)?$/;

/** The version a fixture package is built for, checked (it ends up in a shell script and a file name). */
export function fixtureVersion(version: string): string {
  if (!FIXTURE_VERSION.test(version)) throw new Error(`fixture version ${version} is not like v1.31.2 or v1.31.2+k3s1`);
  return version;
}

/**
 * The `bin/edgeadm` of a package built with `withEdgeadm`: not a stand-in,
 * but this tree's real edgeadm (bin/run.js on lib/, built by the test's
 * ensureCliBuilt), so that `join --enable-edge` runs the real edge-proxy on
 * the test host.
 */
export function edgeadmFromSourceScript(version?: string): string {
  return [
    '#!/bin/sh',
    "# edgeadm from this repository's build (lib/), for edgeadm's tests.",
    // Each version's package carries its own bytes, so that an upgrade's swap of bin/edgeadm shows.
    ...(version === undefined ? [] : [`# shipped in the ${version} test package`]),
    `exec '${simK3sNodePath()}' '${join(REPO_ROOT, 'bin', 'run.js')}' "$@"`,
    '',
  ].join('\n');
}

/** The four bytes a zstd frame starts with (RFC 8878, 3.1.1). */
export const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);

/** Options of {@link buildSimK3sPackage}. */
export interface SimK3sPackageOptions {
  /** Also ship bin/edgeadm (this tree's edgeadm), as a package for --enable-edge must. */
  withEdgeadm?: boolean;
  /** Add an incompressible images/ archive of this size, so an upload takes a while (for interruption tests). */
  imageBytes?: number;
  /** Airgap image archives to carry, by file name under images/ (e.g. `app.tar`). */
  images?: Readonly<Record<string, Buffer>>;
  /** Source and output names for this package, so a test can hold several. */
  tag?: string;
  /**
   * The Kubernetes version the package carries, in k3s's form
   * (`v1.31.2+k3s1`): the manifest says it and the simulated k3s reports it.
   * Without it: v1.30.4 in the manifest, and the simulation reports `v1.30.4+sim`.
   */
  kubernetesVersion?: string;
  /**
   * A broken release, for rollback tests: `k3s server` writes a marker file
   * into the datastore directory (as a failing binary may touch its
   * datastore) and exits 1 without serving; every other command still runs.
   */
  isServerBroken?: boolean;
  /** A broken release for nodes: `k3s agent` exits 1 without registering (for `upgrade node`'s rollback tests). */
  isAgentBroken?: boolean;
  /** The architecture the manifest names (amd64 by default), for tests of a package built for another host. */
  arch?: Architecture;
  /** More executables under bin/, by name and content (for tests of what a package must not install). */
  extraBinaries?: Readonly<Record<string, string>>;
}

/** The file a broken fixture's `k3s server` leaves in the datastore directory before it fails. */
export const BROKEN_SERVER_MARKER = '/var/lib/rancher/k3s/server/db/written-by-a-broken-k3s';

/** Builds `<workDir>/sim-k3s.tar.gz`, an install package with the simulated k3s. */
export async function buildSimK3sPackage(workDir: string, options: SimK3sPackageOptions = {}): Promise<BuiltPackage> {
  const version = options.kubernetesVersion === undefined ? undefined : fixtureVersion(options.kubernetesVersion);
  // One source directory and output per version, so that a test can hold the packages of two versions.
  const tag =
    (version === undefined ? '' : `-${version.replace('+', '-')}`) +
    (options.tag ? `-${options.tag}` : '') +
    (options.isServerBroken ? '-broken' : '') +
    (options.isAgentBroken ? '-broken-agent' : '');
  const source = join(workDir, `sim-k3s${tag}-src`);
  await mkdir(join(source, 'bin'), { recursive: true });
  const script = simK3sScript(version);
  await writeFile(
    join(source, 'bin', 'k3s'),
    options.isServerBroken
      ? script.replace(
          '\nexec ',
          `\nif [ "$1" = server ]; then mkdir -p "$(dirname ${BROKEN_SERVER_MARKER})"; echo broken > ${BROKEN_SERVER_MARKER}; echo 'sim-k3s: this release is broken on purpose' >&2; exit 1; fi\nexec `,
        )
      : options.isAgentBroken
        ? script.replace(
            '\nexec ',
            `\nif [ "$1" = agent ]; then echo 'sim-k3s: this release is broken on purpose' >&2; exit 1; fi\nexec `,
          )
        : script,
  );
  await chmod(join(source, 'bin', 'k3s'), 0o755);
  if (options.withEdgeadm) {
    await writeFile(join(source, 'bin', 'edgeadm'), edgeadmFromSourceScript(version));
    await chmod(join(source, 'bin', 'edgeadm'), 0o755);
  }
  for (const [binary, content] of Object.entries(options.extraBinaries ?? {})) {
    await writeFile(join(source, 'bin', binary), content);
    await chmod(join(source, 'bin', binary), 0o755);
  }
  await mkdir(join(source, 'assets'), { recursive: true });
  await writeFile(join(source, 'assets', 'README'), `${SIM_K3S_MARKER}: a simulated k3s, not k3s.\n`);
  const images: Record<string, Buffer> = { ...options.images };
  if (options.imageBytes) {
    // A zstd frame's magic number first, so the simulation takes it for a .tar.zst as k3s would.
    images['sim-airgap-images.tar.zst'] = Buffer.concat([ZSTD_MAGIC, randomBytes(options.imageBytes)]);
  }
  if (Object.keys(images).length > 0) await mkdir(join(source, 'images'), { recursive: true });
  for (const [name, content] of Object.entries(images)) await writeFile(join(source, 'images', name), content);
  const manifestVersion = version ?? 'v1.30.4';
  const name = `edge-k3s-${manifestVersion}-amd64-sim${options.withEdgeadm ? '-edgeadm' : ''}${options.tag ? `-${options.tag}` : ''}`;
  return buildPackage({
    from: source,
    distribution: 'k3s',
    kubernetesVersion: manifestVersion,
    arch: options.arch ?? 'amd64',
    name,
    output: join(workDir, `sim-k3s${options.withEdgeadm ? '-edgeadm' : ''}${tag}.tar.gz`),
    createdAt: new Date('2024-05-01T12:00:00Z'),
  });
}
