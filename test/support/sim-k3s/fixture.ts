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

/** The marker line in the stand-in, so that nobody mistakes it for k3s. */
export const SIM_K3S_MARKER = 'SIMULATED k3s for edgeadm tests - not k3s';

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MAIN = fileURLToPath(new URL('../sim-main.ts', import.meta.url));

/** The Node 24 binary the stand-in runs with. */
export function simK3sNodePath(): string {
  const pinned = join(REPO_ROOT, 'node_modules', 'node', 'bin', 'node');
  return existsSync(pinned) ? pinned : process.execPath;
}

/** A fixture executable that runs simulated `tool` (see ../sim-main.ts), with its marker line. */
export function simExecutableScript(tool: string, marker: string, readme: string): string {
  return ['#!/bin/sh', `# ${marker}. See ${readme}.`, `exec '${simK3sNodePath()}' '${MAIN}' ${tool} "$@"`, ''].join(
    '\n',
  );
}

/** The `bin/k3s` script of the fixture package. */
export function simK3sScript(): string {
  return simExecutableScript('k3s', SIM_K3S_MARKER, 'test/support/sim-k3s/README.md');
}

/**
 * The `bin/edgeadm` of a package built with `withEdgeadm`: not a stand-in,
 * but this tree's real edgeadm (bin/run.js on lib/, built by the test's
 * ensureCliBuilt), so that `join --enable-edge` runs the real edge-proxy on
 * the test host.
 */
export function edgeadmFromSourceScript(): string {
  return [
    '#!/bin/sh',
    "# edgeadm from this repository's build (lib/), for edgeadm's tests.",
    `exec '${simK3sNodePath()}' '${join(REPO_ROOT, 'bin', 'run.js')}' "$@"`,
    '',
  ].join('\n');
}

/** Options of {@link buildSimK3sPackage}. */
export interface SimK3sPackageOptions {
  /** Also ship bin/edgeadm (this tree's edgeadm), as a package for --enable-edge must. */
  withEdgeadm?: boolean;
  /** Add an incompressible images/ file of this size, so an upload takes a while (for interruption tests). */
  imageBytes?: number;
}

/** Builds `<workDir>/sim-k3s.tar.gz`, an install package with the simulated k3s. */
export async function buildSimK3sPackage(workDir: string, options: SimK3sPackageOptions = {}): Promise<BuiltPackage> {
  const source = join(workDir, 'sim-k3s-src');
  await mkdir(join(source, 'bin'), { recursive: true });
  await writeFile(join(source, 'bin', 'k3s'), simK3sScript());
  await chmod(join(source, 'bin', 'k3s'), 0o755);
  if (options.withEdgeadm) {
    await writeFile(join(source, 'bin', 'edgeadm'), edgeadmFromSourceScript());
    await chmod(join(source, 'bin', 'edgeadm'), 0o755);
  }
  await mkdir(join(source, 'images'), { recursive: true });
  await writeFile(join(source, 'images', 'README'), `${SIM_K3S_MARKER}: no airgap images in the simulation.\n`);
  if (options.imageBytes) {
    await writeFile(join(source, 'images', 'sim-airgap-images.bin'), randomBytes(options.imageBytes));
  }
  return buildPackage({
    from: source,
    distribution: 'k3s',
    kubernetesVersion: 'v1.30.4',
    arch: 'amd64',
    name: options.withEdgeadm ? 'edge-k3s-v1.30.4-amd64-sim-edgeadm' : 'edge-k3s-v1.30.4-amd64-sim',
    output: join(workDir, options.withEdgeadm ? 'sim-k3s-edgeadm.tar.gz' : 'sim-k3s.tar.gz'),
    createdAt: new Date('2024-05-01T12:00:00Z'),
  });
}
