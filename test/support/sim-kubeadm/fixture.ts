/**
 * The fixture install package that carries the SIMULATED kubeadm: a real
 * edgeadm package (`distribution: kubeadm`, built with `buildPackage`, so
 * edgeadm's real package code verifies, uploads, unpacks and installs it)
 * whose bin/kubeadm, bin/kubelet, bin/containerd and bin/ctr run the simulations in
 * this directory (through ../sim-main.ts, as the simulated k3s does),
 * bin/containerd-shim-runc-v2 and bin/runc are inert stand-ins, bin/kubectl
 * runs this machine's real kubectl, cni/ holds inert stand-in plugins, and
 * images/sim-pause.tar is a small real tar archive standing in for an
 * airgap image archive.
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildPackage, type BuiltPackage } from '../../../src/packages/build.js';
import { edgeadmFromSourceScript, fixtureVersion, simExecutableScript } from '../sim-k3s/fixture.js';
import { ensurePinnedKubectl } from '../pinned-kubectl.js';
import { controlPlaneImageRefs } from './layout.js';

/** The marker line in every stand-in, so that nobody mistakes it for the real thing. */
export const SIM_KUBEADM_MARKER = 'SIMULATED kubeadm distribution for edgeadm tests - not Kubernetes';
const README = 'test/support/sim-kubeadm/README.md';

function inertScript(name: string): string {
  return [
    '#!/bin/sh',
    `# ${SIM_KUBEADM_MARKER}. See ${README}.`,
    `echo "${name}: an inert stand-in (${SIM_KUBEADM_MARKER})" >&2`,
    'exit 0',
    '',
  ].join('\n');
}

/** Options of {@link buildSimKubeadmPackage}. */
export interface SimKubeadmPackageOptions {
  /** Also ship bin/edgeadm (this tree's real edgeadm, not a stand-in), as a package for --enable-edge must. */
  withEdgeadm?: boolean;
  /**
   * The Kubernetes version the package carries (`v1.31.2`): the manifest
   * says it, edgeadm's kubeadm driver pins the control plane to it, and the
   * simulated kubeadm and kubelet report it. Without it: v1.30.4, and the
   * executables report `v1.30.4+sim`.
   */
  kubernetesVersion?: string;
  /**
   * A broken release: its kubelet leaves a file in the datastore directory
   * ({@link BROKEN_KUBELET_MARKER}) and exits 1, so the node and (in the
   * simulation, where the kubelet runs the static API server) the API never
   * come back on it.
   */
  isKubeletBroken?: boolean;
}

/** The file a broken fixture's kubelet leaves in the datastore directory before it fails. */
export const BROKEN_KUBELET_MARKER = '/var/lib/etcd/written-by-a-broken-kubelet';

/** Builds `<workDir>/sim-kubeadm.tar.gz`, an install package with the simulated kubeadm distribution. */
export async function buildSimKubeadmPackage(
  workDir: string,
  options: SimKubeadmPackageOptions = {},
): Promise<BuiltPackage> {
  const version = options.kubernetesVersion === undefined ? undefined : fixtureVersion(options.kubernetesVersion);
  if (version?.includes('+')) throw new Error(`a kubeadm package carries an upstream version, not ${version}`);
  // One source directory and output per version, so that a test can hold the packages of two versions.
  const tag = (version === undefined ? '' : `-${version}`) + (options.isKubeletBroken ? '-broken' : '');
  const source = join(workDir, `sim-kubeadm${tag}-src`);
  const files: Record<string, string> = {
    'bin/kubeadm': simExecutableScript('kubeadm', SIM_KUBEADM_MARKER, README, version),
    'bin/kubelet': options.isKubeletBroken
      ? simExecutableScript('kubelet', SIM_KUBEADM_MARKER, README, version).replace(
          '\nexec ',
          `\nif [ "$1" != --version ]; then echo broken > ${BROKEN_KUBELET_MARKER}; echo 'sim-kubelet: this release is broken on purpose' >&2; exit 1; fi\nexec `,
        )
      : simExecutableScript('kubelet', SIM_KUBEADM_MARKER, README, version),
    'bin/containerd': simExecutableScript('containerd', SIM_KUBEADM_MARKER, README),
    'bin/ctr': simExecutableScript('ctr', SIM_KUBEADM_MARKER, README),
    'bin/containerd-shim-runc-v2': inertScript('containerd-shim-runc-v2'),
    'bin/runc': inertScript('runc'),
    'bin/kubectl': [
      '#!/bin/sh',
      `# ${SIM_KUBEADM_MARKER}: runs the test suites' pinned real kubectl.`,
      `exec '${ensurePinnedKubectl()}' "$@"`,
      '',
    ].join('\n'),
    'cni/bridge': inertScript('bridge'),
    'cni/host-local': inertScript('host-local'),
    'cni/loopback': inertScript('loopback'),
    'assets/README': `${SIM_KUBEADM_MARKER}: no airgap images in the simulation.\n`,
    ...(options.withEdgeadm ? { 'bin/edgeadm': edgeadmFromSourceScript(version) } : {}),
  };
  for (const [path, text] of Object.entries(files)) {
    const target = join(source, path);
    await mkdir(join(target, '..'), { recursive: true });
    await writeFile(target, text);
    if (!path.startsWith('assets/')) await chmod(target, 0o755);
  }
  await mkdir(join(source, 'images'), { recursive: true });
  execFileSync('tar', ['-cf', join(source, 'images', 'sim-pause.tar'), '-C', join(source, 'assets'), 'README']);
  if (version !== undefined) {
    // A versioned package carries its control-plane images, named as `docker save` names them
    // (manifest.json, RepoTags), so that an offline upgrade has them to import; no layers.
    const imageDir = join(workDir, `sim-kubeadm${tag}-images`);
    await mkdir(imageDir, { recursive: true });
    await writeFile(
      join(imageDir, 'manifest.json'),
      JSON.stringify([{ Config: 'config.json', RepoTags: controlPlaneImageRefs(version), Layers: [] }]),
    );
    await writeFile(join(imageDir, 'config.json'), '{}');
    execFileSync('tar', [
      '-cf',
      join(source, 'images', 'sim-control-plane.tar'),
      '-C',
      imageDir,
      'manifest.json',
      'config.json',
    ]);
  }
  const manifestVersion = version ?? 'v1.30.4';
  return buildPackage({
    from: source,
    distribution: 'kubeadm',
    kubernetesVersion: manifestVersion,
    arch: 'amd64',
    name: `edge-kubeadm-${manifestVersion}-amd64-sim${options.withEdgeadm ? '-edgeadm' : ''}${options.isKubeletBroken ? '-broken' : ''}`,
    output: join(workDir, `sim-kubeadm${options.withEdgeadm ? '-edgeadm' : ''}${tag}.tar.gz`),
    createdAt: new Date('2024-05-01T12:00:00Z'),
  });
}
