/**
 * Container images without a registry, for the real-Kubernetes rig: an OCI
 * image layout packed as one tar (one uncompressed layer, a config, a
 * manifest, `index.json`), named for containerd with the
 * `io.containerd.image.name` annotation so that `ctr -n k8s.io images
 * import` (edgeadm's air-gap image path for kubeadm) stores it under the
 * exact reference kubeadm's manifests name (`registry.k8s.io/etcd:3.6.5-0`).
 *
 * The image's files come from this machine: the programs the rig built from
 * their Go modules, and for the few images that need more than one static
 * binary, programs from Debian's packages with the shared libraries `ldd`
 * names. Nothing is downloaded.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { create as createTar } from 'tar';

/** One file of an image's root file system. */
export type ImageFile =
  | { path: string; from: string; mode?: number }
  | { path: string; content: string | Buffer; mode?: number }
  | { path: string; symlinkTo: string };

/** What one image holds. */
export interface ImageSpec {
  /** The full reference containerd stores it under, `registry.k8s.io/pause:3.10.1`. */
  reference: string;
  files: ImageFile[];
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
}

const sha256 = (data: Buffer): string => `sha256:${createHash('sha256').update(data).digest('hex')}`;

/** Every shared library a dynamically linked program loads, as `ldd` lists them (none for a static one). */
export function sharedLibrariesOf(program: string): string[] {
  let out: string;
  try {
    out = execFileSync('ldd', [program], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch {
    return []; // "not a dynamic executable"
  }
  const libraries = new Set<string>();
  for (const line of out.split('\n')) {
    const match = /=>\s+(\/\S+)|^\s*(\/\S+)\s+\(/.exec(line);
    const path = match?.[1] ?? match?.[2];
    if (path) libraries.add(path);
  }
  return [...libraries];
}

/** A program of this machine with the libraries it loads, at the same paths in the image. */
export function programWithLibraries(program: string, inImage = program): ImageFile[] {
  return [
    { path: inImage, from: program, mode: 0o755 },
    ...sharedLibrariesOf(program).map((library) => ({ path: library, from: library, mode: 0o755 })),
  ];
}

function stageRootfs(dir: string, files: ImageFile[]): void {
  for (const file of files) {
    const target = join(dir, file.path);
    mkdirSync(dirname(target), { recursive: true });
    rmSync(target, { force: true });
    if ('symlinkTo' in file) symlinkSync(file.symlinkTo, target);
    else if ('from' in file) {
      copyFileSync(file.from, target);
      chmodSync(target, file.mode ?? statSync(file.from).mode & 0o777);
    } else {
      writeFileSync(target, file.content);
      chmodSync(target, file.mode ?? 0o644);
    }
  }
}

/**
 * Writes `spec` as an OCI image archive at `output`, for linux/amd64.
 * Reproducible: fixed times and owners, so the same files give the same digest.
 */
export async function writeImageArchive(spec: ImageSpec, output: string): Promise<{ digest: string }> {
  const work = mkdtempSync(join(tmpdir(), 'edgeadm-oci-'));
  try {
    const rootfs = join(work, 'rootfs');
    mkdirSync(rootfs);
    stageRootfs(rootfs, spec.files);
    const entries = execFileSync('find', ['.', '-mindepth', '1'], { cwd: rootfs, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map((entry) => entry.slice(2))
      .sort();
    const layerFile = join(work, 'layer.tar');
    await createTar(
      { file: layerFile, cwd: rootfs, portable: true, noDirRecurse: true, mtime: new Date(0), gzip: false },
      entries,
    );
    const layer = readFileSync(layerFile);
    const layerDigest = sha256(layer);
    const config = Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: {
          Env: spec.env ?? ['PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
          ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
          ...(spec.cmd ? { Cmd: spec.cmd } : {}),
        },
        rootfs: { type: 'layers', diff_ids: [layerDigest] },
        history: [{ created_by: 'edgeadm real-Kubernetes rig (test/support/real/oci-image.ts)' }],
      }),
    );
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256(config), size: config.length },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layerDigest, size: layer.length }],
      }),
    );
    const manifestDigest = sha256(manifest);
    const tag = spec.reference.slice(spec.reference.lastIndexOf(':') + 1);
    const index = {
      schemaVersion: 2,
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: manifestDigest,
          size: manifest.length,
          platform: { architecture: 'amd64', os: 'linux' },
          annotations: { 'io.containerd.image.name': spec.reference, 'org.opencontainers.image.ref.name': tag },
        },
      ],
    };
    const layout = join(work, 'layout');
    const blobs = join(layout, 'blobs', 'sha256');
    mkdirSync(blobs, { recursive: true });
    for (const blob of [layer, config, manifest])
      writeFileSync(join(blobs, sha256(blob).slice('sha256:'.length)), blob);
    writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    writeFileSync(join(layout, 'index.json'), JSON.stringify(index));
    mkdirSync(dirname(output), { recursive: true });
    await createTar({ file: output, cwd: layout, portable: true, mtime: new Date(0) }, [
      'oci-layout',
      'index.json',
      'blobs',
    ]);
    return { digest: manifestDigest };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
