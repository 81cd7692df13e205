/**
 * The names of the images inside an airgap image archive, for the SBOM that
 * `package build` writes (sbom.ts). Read, never trusted: an archive whose
 * index cannot be read simply has no names in the SBOM, and the build goes
 * on (its SHA-256 is in the SBOM either way).
 *
 * Two layouts carry names:
 * - an OCI image layout (`index.json`): each manifest's
 *   `io.containerd.image.name` annotation (what `ctr images import` stores
 *   it under), else its `org.opencontainers.image.ref.name`, with the
 *   manifest's digest;
 * - a `docker save` archive (`manifest.json`, what k3s's airgap image
 *   tarballs are): each image's `RepoTags`, with no digest (a docker archive
 *   has none for the registry manifest).
 *
 * gzip and zstd archives are read through the tar package's own
 * decompression.
 */
import { list, type ReadEntry } from 'tar';

/** Largest index file read from an archive. */
export const MAX_IMAGE_INDEX_BYTES = 1024 * 1024;
/** Most image names taken from one archive. */
export const MAX_IMAGES_PER_ARCHIVE = 1000;

/** One image an archive holds. */
export interface ImageReference {
  /** The full reference, e.g. `registry.k8s.io/pause:3.10.1`. */
  reference: string;
  /** The image manifest's digest, `sha256:<hex>`, when the layout records it. */
  digest?: string;
}

/** The images an archive names, or an empty list when it names none that can be read. */
export async function readImageReferences(file: string): Promise<ImageReference[]> {
  const indexes: { name: 'index.json' | 'manifest.json'; bytes: Buffer }[] = [];
  try {
    await list({
      file,
      filter: (path) =>
        path === 'index.json' || path === 'manifest.json' || path === './index.json' || path === './manifest.json',
      onReadEntry: (entry: ReadEntry) => {
        if (entry.size > MAX_IMAGE_INDEX_BYTES) {
          entry.resume();
          return;
        }
        const chunks: Buffer[] = [];
        entry.on('data', (chunk: Buffer) => chunks.push(chunk));
        entry.on('end', () => {
          const name = entry.path.replace(/^\.\//, '') as 'index.json' | 'manifest.json';
          indexes.push({ name, bytes: Buffer.concat(chunks) });
        });
      },
    });
  } catch {
    return [];
  }
  const oci = indexes.find((index) => index.name === 'index.json');
  const docker = indexes.find((index) => index.name === 'manifest.json');
  const found = (oci && fromOciIndex(oci.bytes)) || (docker && fromDockerManifest(docker.bytes)) || [];
  return found.slice(0, MAX_IMAGES_PER_ARCHIVE);
}

/** Names in an OCI `index.json`. Pure. */
export function fromOciIndex(bytes: Buffer): ImageReference[] | undefined {
  const index = parseJson(bytes) as { manifests?: unknown } | undefined;
  if (!index || !Array.isArray(index.manifests)) return undefined;
  const references: ImageReference[] = [];
  for (const manifest of index.manifests as unknown[]) {
    const record = manifest as { digest?: unknown; annotations?: Record<string, unknown> } | null;
    const annotations = record?.annotations ?? {};
    const name = annotations['io.containerd.image.name'] ?? annotations['org.opencontainers.image.ref.name'];
    if (typeof name !== 'string' || name === '') continue;
    const digest =
      typeof record?.digest === 'string' && /^sha256:[0-9a-f]{64}$/.test(record.digest) ? record.digest : undefined;
    references.push({ reference: name, ...(digest === undefined ? {} : { digest }) });
  }
  return references.length > 0 ? references : undefined;
}

/** Names in a `docker save` `manifest.json`. Pure. */
export function fromDockerManifest(bytes: Buffer): ImageReference[] | undefined {
  const images = parseJson(bytes);
  if (!Array.isArray(images)) return undefined;
  const references = images.flatMap((image: { RepoTags?: unknown } | null) =>
    Array.isArray(image?.RepoTags) ? image.RepoTags.filter((tag): tag is string => typeof tag === 'string') : [],
  );
  return references.length > 0 ? references.map((reference) => ({ reference })) : undefined;
}

/**
 * Splits a reference into its repository and tag (`registry.k8s.io/pause:3.10.1`
 * → `registry.k8s.io/pause`, `3.10.1`); the tag is absent when the reference
 * has none. A port in the registry host is not a tag.
 */
export function splitReference(reference: string): { repository: string; tag?: string } {
  const withoutDigest = reference.split('@')[0] ?? reference;
  const slash = withoutDigest.lastIndexOf('/');
  const colon = withoutDigest.lastIndexOf(':');
  if (colon > slash) return { repository: withoutDigest.slice(0, colon), tag: withoutDigest.slice(colon + 1) };
  return { repository: withoutDigest };
}

function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}
