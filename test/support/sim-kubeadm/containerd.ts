/**
 * A SIMULATED containerd — not containerd — for edgeadm's tests: it reads
 * the config.toml edgeadm wrote (`--config`), creates its root and state
 * directories and listens on the configured gRPC socket, so that the
 * runtime phase's wait for the socket and the simulated kubelet's wait for
 * its container runtime are the real ones. It runs no containers and speaks
 * no CRI: a connection is accepted and closed.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname } from 'node:path';
import { simLogger } from '../sim-node.js';

/** The version the simulation reports; `+sim` says what it is. */
export const SIM_CONTAINERD_VERSION = 'v1.7.22+sim';
const DEFAULT_CONFIG = '/etc/containerd/config.toml';

const log = simLogger('sim-containerd (SIMULATED containerd for tests)');

function tomlString(text: string, key: string): string | undefined {
  return new RegExp(`^\\s*${key}\\s*=\\s*"([^"]*)"`, 'm').exec(text)?.[1];
}

/** `containerd [--config FILE] | --version`. */
export async function runSimContainerd(argv: string[]): Promise<number> {
  if (argv.includes('--version') || argv[0] === 'version') {
    process.stdout.write(`containerd ${SIM_CONTAINERD_VERSION} (SIMULATED containerd for edgeadm tests)\n`);
    return 0;
  }
  const at = argv.indexOf('--config');
  const configPath = at >= 0 ? (argv[at + 1] ?? DEFAULT_CONFIG) : DEFAULT_CONFIG;
  const config = existsSync(configPath) ? await readFile(configPath, 'utf8') : '';
  const socket = tomlString(config, 'address') ?? '/run/containerd/containerd.sock';
  for (const dir of [
    tomlString(config, 'root') ?? '/var/lib/containerd',
    tomlString(config, 'state') ?? '/run/containerd',
  ]) {
    await mkdir(dir, { recursive: true, mode: 0o711 });
  }
  if (!/SystemdCgroup\s*=\s*true/.test(config)) log(`${configPath} does not set SystemdCgroup = true`);
  await mkdir(dirname(socket), { recursive: true });
  await rm(socket, { force: true });
  const server = createServer((connection) => connection.end());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, resolve);
  });
  log(`serving on ${socket} (no containers: a simulation)`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await rm(socket, { force: true });
  return 0;
}

/** Where the simulated `ctr` records the archives it was asked to import (inside containerd's root). */
export const SIM_IMPORTED_IMAGES_LIST = '/var/lib/containerd/sim-imported-images.list';

/**
 * Where the simulated `ctr` records the image references (`NAMESPACE REF`)
 * an imported archive names: what `ctr images ls` would list afterwards, and
 * what the simulated kubeadm and kubelet look images up in.
 */
export const SIM_IMAGE_REFS_LIST = '/var/lib/containerd/sim-image-refs.list';

/**
 * The references an image archive names, as `docker save` writes them (a
 * `manifest.json` at the archive's root, each entry with its `RepoTags`),
 * which is how `ctr images import` names what it imports. None when the
 * archive has no such file.
 */
function repoTagsOf(file: string): string[] {
  let text: string;
  try {
    text = execFileSync('tar', ['-xOf', file, 'manifest.json'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return [];
  }
  const entries = JSON.parse(text) as Array<{ RepoTags?: string[] }>;
  return entries.flatMap((entry) => entry.RepoTags ?? []);
}

/** The image references imported into containerd's `namespace` (see {@link SIM_IMAGE_REFS_LIST}). */
export function simImportedImageRefs(namespace: string): Set<string> {
  if (!existsSync(SIM_IMAGE_REFS_LIST)) return new Set();
  return new Set(
    readFileSync(SIM_IMAGE_REFS_LIST, 'utf8')
      .split('\n')
      .filter((line) => line.startsWith(`${namespace} `))
      .map((line) => line.slice(namespace.length + 1)),
  );
}

/**
 * A SIMULATED `ctr` — not ctr: `ctr --address SOCKET -n NAMESPACE images
 * import FILE` checks that containerd answers on SOCKET and that FILE is a
 * tar archive, then appends `NAMESPACE FILE SHA-256` to
 * {@link SIM_IMPORTED_IMAGES_LIST} instead of unpacking images, and the
 * references the archive's manifest.json names to {@link SIM_IMAGE_REFS_LIST}.
 */
export async function runSimCtr(argv: string[]): Promise<number> {
  const valueOf = (flag: string): string | undefined => {
    const at = argv.indexOf(flag);
    return at >= 0 ? argv[at + 1] : undefined;
  };
  const address = valueOf('--address') ?? '/run/containerd/containerd.sock';
  const namespace = valueOf('-n') ?? valueOf('--namespace') ?? 'default';
  const at = argv.indexOf('import');
  const file = at >= 0 && argv[at - 1] === 'images' ? argv[at + 1] : undefined;
  if (!file) {
    process.stderr.write('usage: ctr --address SOCKET -n NAMESPACE images import FILE  (SIMULATED ctr)\n');
    return 2;
  }
  const { isSocketServing } = await import('./layout.js');
  if (!(await isSocketServing(`unix://${address}`))) {
    process.stderr.write(`ctr: failed to dial "${address}": containerd is not running (SIMULATED ctr)\n`);
    return 1;
  }
  const bytes = await readFile(file);
  if (bytes.subarray(257, 262).toString('latin1') !== 'ustar') {
    process.stderr.write(`ctr: ${file} is not a tar archive (SIMULATED ctr)\n`);
    return 1;
  }
  const { createHash } = await import('node:crypto');
  const { appendFile } = await import('node:fs/promises');
  await mkdir(dirname(SIM_IMPORTED_IMAGES_LIST), { recursive: true });
  await appendFile(
    SIM_IMPORTED_IMAGES_LIST,
    `${namespace} ${file} ${createHash('sha256').update(bytes).digest('hex')}\n`,
  );
  const refs = repoTagsOf(file);
  if (refs.length > 0) await appendFile(SIM_IMAGE_REFS_LIST, refs.map((ref) => `${namespace} ${ref}\n`).join(''));
  process.stdout.write(`unpacking images from ${file} (SIMULATED ctr: recorded only)\n`);
  return 0;
}
