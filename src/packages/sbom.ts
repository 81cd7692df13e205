/**
 * The package's bill of materials: a CycloneDX 1.6 JSON document that
 * `package build` writes into every package as `sbom.cdx.json` (issue #39).
 * Pure: no I/O; the builder reads the files and the image archives.
 *
 * It lists every file of the package with its SHA-256 (the manifest's), and
 * names what can be named: each binary under bin/ with its version where
 * the package says it (the distribution's own binaries carry the package's
 * Kubernetes version; others, such as containerd, get no version rather than
 * a guess), and each image inside each airgap archive with its reference,
 * tag and manifest digest where the archive records them.
 *
 * The SBOM is an ordinary file listed in manifest.json, so the manifest's
 * signature covers it. It cannot list itself or the manifest (each holds the
 * other's hash, or its own), and says so in its metadata.
 *
 * The same inputs give the same bytes: the serial number is derived from the
 * manifest content, the timestamp is the package's creation time.
 */
import { createHash } from 'node:crypto';
import { splitReference, type ImageReference } from './image-references.js';
import { isAirgapImage, MANIFEST_PATH, type Architecture, type Distribution, type PackageFile } from './manifest.js';

/** Where the SBOM lives in a package. */
export const SBOM_PATH = 'sbom.cdx.json';
/** The CycloneDX version written. */
export const SBOM_SPEC_VERSION = '1.6';

/** What the SBOM describes. */
export interface SbomInput {
  name: string;
  distribution: Distribution;
  kubernetesVersion: string;
  arch: Architecture;
  /** ISO 8601 UTC, the package's creation time. */
  createdAt: string;
  /** Every file of the package except the SBOM and the manifest. */
  files: PackageFile[];
  /** Images inside each airgap archive, by package path; absent or empty when none could be read. */
  images: ReadonlyMap<string, readonly ImageReference[]>;
  /** The edgeadm version that builds it. */
  toolVersion: string;
}

/** The binaries whose version is the package's Kubernetes version, per distribution. */
const VERSIONED_BINARIES: Readonly<Record<Distribution, readonly string[]>> = {
  k3s: ['k3s'],
  kubeadm: ['kubeadm', 'kubelet', 'kubectl'],
};

/** Where each distribution's own binaries come from, as a package URL type and namespace. */
const SOURCE_PURL: Readonly<Record<Distribution, string>> = {
  k3s: 'pkg:github/k3s-io/k3s',
  kubeadm: 'pkg:github/kubernetes/kubernetes',
};

interface Component {
  type: string;
  'bom-ref': string;
  name: string;
  version?: string;
  description?: string;
  hashes?: { alg: 'SHA-256'; content: string }[];
  purl?: string;
  properties?: { name: string; value: string }[];
  components?: Component[];
}

/** Renders the SBOM: canonical JSON, two-space indent, a final newline. */
export function renderSbom(input: SbomInput): Buffer {
  const components = [...input.files]
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    .map((file) => fileComponent(file, input));
  const document = {
    bomFormat: 'CycloneDX',
    specVersion: SBOM_SPEC_VERSION,
    serialNumber: serialNumber(input),
    version: 1,
    metadata: {
      timestamp: input.createdAt,
      tools: { components: [{ type: 'application', name: 'edgeadm', version: input.toolVersion }] },
      component: {
        type: 'platform',
        'bom-ref': 'package',
        name: input.name,
        version: input.kubernetesVersion,
        description: `edgeadm install package: ${input.distribution} ${input.kubernetesVersion} for ${input.arch}`,
        properties: [
          { name: 'edgeadm:distribution', value: input.distribution },
          { name: 'edgeadm:arch', value: input.arch },
          {
            name: 'edgeadm:not-listed',
            value: `${MANIFEST_PATH} and ${SBOM_PATH} (each holds the other's SHA-256, or would hold its own)`,
          },
        ],
      },
    },
    components,
    dependencies: [{ ref: 'package', dependsOn: components.map((component) => component['bom-ref']) }],
  };
  return Buffer.from(`${JSON.stringify(document, null, 2)}\n`, 'utf8');
}

function fileComponent(file: PackageFile, input: SbomInput): Component {
  const hashes = [{ alg: 'SHA-256' as const, content: file.sha256 }];
  const properties = [
    { name: 'edgeadm:path', value: file.path },
    { name: 'edgeadm:mode', value: file.mode },
    { name: 'edgeadm:size', value: String(file.size) },
  ];
  const ref = `file:${file.path}`;
  if (file.path.startsWith('bin/') && !file.path.slice(4).includes('/')) {
    const name = file.path.slice(4);
    const isVersioned = VERSIONED_BINARIES[input.distribution].includes(name);
    return {
      type: 'application',
      'bom-ref': ref,
      name,
      ...(isVersioned
        ? {
            version: input.kubernetesVersion,
            purl: `${SOURCE_PURL[input.distribution]}@${encodeURIComponent(input.kubernetesVersion)}`,
          }
        : {}),
      hashes,
      properties,
    };
  }
  const images = isAirgapImage(file.path, input.distribution) ? (input.images.get(file.path) ?? []) : [];
  return {
    type: 'file',
    'bom-ref': ref,
    name: file.path,
    hashes,
    properties,
    ...(images.length > 0
      ? { components: images.map((image, index) => imageComponent(image, `${ref}#${index}`)) }
      : {}),
  };
}

function imageComponent(image: ImageReference, ref: string): Component {
  const { repository, tag } = splitReference(image.reference);
  const lastSegment = repository.slice(repository.lastIndexOf('/') + 1);
  const query = [
    `repository_url=${encodeURIComponent(repository)}`,
    ...(tag ? [`tag=${encodeURIComponent(tag)}`] : []),
  ];
  return {
    type: 'container',
    'bom-ref': ref,
    name: repository,
    ...(tag === undefined ? {} : { version: tag }),
    description: image.reference,
    ...(image.digest === undefined
      ? {}
      : {
          hashes: [{ alg: 'SHA-256' as const, content: image.digest.slice('sha256:'.length) }],
          purl: `pkg:oci/${encodeURIComponent(lastSegment)}@${encodeURIComponent(image.digest)}?${query.join('&')}`,
        }),
  };
}

/** `urn:uuid:` of a name-based (version 5 layout) UUID from the package's content, so that rebuilds agree. */
function serialNumber(input: SbomInput): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([input.name, input.kubernetesVersion, input.arch, input.createdAt, input.files]))
    .digest();
  digest[6] = (digest[6]! & 0x0f) | 0x50;
  digest[8] = (digest[8]! & 0x3f) | 0x80;
  const hex = digest.subarray(0, 16).toString('hex');
  return `urn:uuid:${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
