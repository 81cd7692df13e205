/**
 * The bill of materials `package build` writes (src/packages/sbom.ts): valid
 * CycloneDX 1.6 by the CycloneDX project's own JSON schema and validator
 * (@cyclonedx/cyclonedx-library, with ajv), every file with the manifest's
 * SHA-256, the binaries and the images named, and covered by the manifest
 * (so by its signature). `package inspect --sbom` reads it back out.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { Spec, Validation } from '@cyclonedx/cyclonedx-library';
import { create as createTar } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPackage, type BuiltPackage } from '../../../src/packages/build.js';
import { fromDockerManifest, fromOciIndex, splitReference } from '../../../src/packages/image-references.js';
import { readPackageSbom } from '../../../src/packages/inspect.js';
import { SBOM_PATH } from '../../../src/packages/sbom.js';
import {
  FIXTURE_CREATED_AT,
  GOOD_FILES,
  manifestEntry,
  manifestFor,
  tarBytes,
  writeSourceDir,
} from '../../support/package-fixtures.js';

const PAUSE_DIGEST = `sha256:${'ab'.repeat(32)}`;
let dir: string;
let built: BuiltPackage;
let sbomText: string;

interface Component {
  type: string;
  'bom-ref': string;
  name: string;
  version?: string;
  purl?: string;
  hashes?: { alg: string; content: string }[];
  properties?: { name: string; value: string }[];
  components?: Component[];
}

/** An OCI image layout as one tar, named for containerd (as test/support/real/oci-image.ts makes them). */
async function ociArchive(file: string): Promise<void> {
  const layout = join(dir, 'oci-layout');
  await mkdir(layout, { recursive: true });
  await writeFile(join(layout, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
  await writeFile(
    join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: PAUSE_DIGEST,
          size: 100,
          annotations: {
            'io.containerd.image.name': 'registry.k8s.io/pause:3.10.1',
            'org.opencontainers.image.ref.name': '3.10.1',
          },
        },
      ],
    }),
  );
  await createTar({ file, cwd: layout, portable: true }, ['oci-layout', 'index.json']);
}

/** A `docker save` archive, gzip-compressed (k3s airgap archives are this layout). */
async function dockerArchive(file: string): Promise<void> {
  const layout = join(dir, 'docker-layout');
  await mkdir(layout, { recursive: true });
  await writeFile(
    join(layout, 'manifest.json'),
    JSON.stringify([
      {
        Config: 'c.json',
        RepoTags: ['docker.io/rancher/mirrored-coredns-coredns:1.12.0', 'docker.io/rancher/klipper-helm:v0.9.3'],
        Layers: [],
      },
    ]),
  );
  await createTar({ file, cwd: layout, gzip: true, portable: true }, ['manifest.json']);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeadm-sbom-'));
  const source = await writeSourceDir(join(dir, 'src'), {
    'bin/k3s': { content: Buffer.from('k3s binary'), mode: 0o755 },
    'bin/crictl': { content: Buffer.from('crictl binary'), mode: 0o755 },
    'assets/k3s.service': { content: Buffer.from('[Unit]\n'), mode: 0o644 },
  });
  await mkdir(join(dir, 'images'));
  await ociArchive(join(dir, 'images', 'pause.tar'));
  await dockerArchive(join(dir, 'images', 'k3s-airgap-images-amd64.tar.gz'));
  built = await buildPackage({
    from: source,
    images: join(dir, 'images'),
    distribution: 'k3s',
    kubernetesVersion: 'v1.30.4+k3s1',
    arch: 'amd64',
    output: join(dir, 'pkg.tar.gz'),
    createdAt: FIXTURE_CREATED_AT,
  });
  sbomText = (await readPackageSbom(built.file)).sbom.toString('utf8');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the SBOM in a built package', () => {
  it('is valid CycloneDX 1.6 by the CycloneDX JSON schema (strict validator)', async () => {
    const validator = new Validation.JsonStrictValidator(Spec.Version.v1dot6);
    expect(await validator.validate(sbomText)).toBeNull();
  });

  it('and the validator does refuse a document that breaks the schema (the check can fail)', async () => {
    const validator = new Validation.JsonStrictValidator(Spec.Version.v1dot6);
    const broken = JSON.parse(sbomText) as { components: Component[] };
    broken.components[0]!.hashes = [{ alg: 'SHA-256', content: 'not hex' }];
    expect(await validator.validate(JSON.stringify(broken))).not.toBeNull();
  });

  it('lists every other file of the package with the SHA-256 the manifest has', () => {
    const sbom = JSON.parse(sbomText) as { components: Component[] };
    const byPath = new Map(
      sbom.components.map((c) => [c.properties?.find((p) => p.name === 'edgeadm:path')?.value, c.hashes?.[0]?.content]),
    );
    const listed = built.manifest.files.filter((file) => file.path !== SBOM_PATH);
    expect([...byPath.keys()].sort()).toEqual(listed.map((file) => file.path).sort());
    for (const file of listed) expect(byPath.get(file.path)).toBe(file.sha256);
  });

  it("names k3s with the package's version, and leaves a version it cannot know out", () => {
    const sbom = JSON.parse(sbomText) as { components: Component[] };
    expect(sbom.components.find((c) => c.name === 'k3s')).toMatchObject({
      type: 'application',
      version: 'v1.30.4+k3s1',
      purl: 'pkg:github/k3s-io/k3s@v1.30.4%2Bk3s1',
    });
    expect(sbom.components.find((c) => c.name === 'crictl')?.version).toBeUndefined();
  });

  it('names the images inside each archive: reference, tag and digest (OCI), references (docker save, gzip)', () => {
    const sbom = JSON.parse(sbomText) as { components: Component[] };
    const pause = sbom.components.find((c) => c.name === 'images/pause.tar')!;
    expect(pause.components).toEqual([
      expect.objectContaining({
        type: 'container',
        name: 'registry.k8s.io/pause',
        version: '3.10.1',
        hashes: [{ alg: 'SHA-256', content: 'ab'.repeat(32) }],
        purl: `pkg:oci/pause@sha256%3A${'ab'.repeat(32)}?repository_url=registry.k8s.io%2Fpause&tag=3.10.1`,
      }),
    ]);
    const airgap = sbom.components.find((c) => c.name === 'images/k3s-airgap-images-amd64.tar.gz')!;
    expect(airgap.components?.map((c) => [c.name, c.version])).toEqual([
      ['docker.io/rancher/mirrored-coredns-coredns', '1.12.0'],
      ['docker.io/rancher/klipper-helm', 'v0.9.3'],
    ]);
  });

  it('is itself listed in the manifest with its SHA-256, so the signature covers it', () => {
    const entry = built.manifest.files.find((file) => file.path === SBOM_PATH)!;
    expect(entry.sha256).toBe(createHash('sha256').update(sbomText).digest('hex'));
  });

  it('is the same bytes for the same input (reproducible builds)', async () => {
    const again = await buildPackage({
      from: join(dir, 'src'),
      images: join(dir, 'images'),
      distribution: 'k3s',
      kubernetesVersion: 'v1.30.4+k3s1',
      arch: 'amd64',
      output: join(dir, 'again.tar.gz'),
      createdAt: FIXTURE_CREATED_AT,
    });
    expect((await readPackageSbom(again.file)).sbom.toString('utf8')).toBe(sbomText);
  });
});

describe('image references', () => {
  it('reads OCI index annotations and docker RepoTags, and nothing from anything else', () => {
    expect(
      fromOciIndex(Buffer.from('{"manifests":[{"annotations":{"org.opencontainers.image.ref.name":"x:1"}}]}')),
    ).toEqual([{ reference: 'x:1' }]);
    expect(fromDockerManifest(Buffer.from('[{"RepoTags":["a/b:c"]}]'))).toEqual([{ reference: 'a/b:c' }]);
    expect(fromOciIndex(Buffer.from('not json'))).toBeUndefined();
    expect(fromDockerManifest(Buffer.from('{}'))).toBeUndefined();
  });

  it('splits a reference at its tag, not at a registry port', () => {
    expect(splitReference('registry.local:5000/pause:3.10')).toEqual({
      repository: 'registry.local:5000/pause',
      tag: '3.10',
    });
    expect(splitReference('registry.local:5000/pause')).toEqual({ repository: 'registry.local:5000/pause' });
  });
});

describe('readPackageSbom', () => {
  it('refuses a package built before SBOMs, saying to rebuild it', async () => {
    const file = join(dir, 'no-sbom.tar.gz');
    await writeFile(
      file,
      gzipSync(
        tarBytes([
          manifestEntry(manifestFor(GOOD_FILES)),
          ...GOOD_FILES.map((f) => ({ path: f.path, content: f.content, mode: f.mode })),
        ]),
      ),
    );
    await expect(readPackageSbom(file)).rejects.toMatchObject({ code: 'E_PACKAGE_MISSING_FILE', entry: SBOM_PATH });
  });
});
