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
import { edgeadmFromSourceScript, simExecutableScript } from '../sim-k3s/fixture.js';
import { ensurePinnedKubectl } from '../pinned-kubectl.js';

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
}

/** Builds `<workDir>/sim-kubeadm.tar.gz`, an install package with the simulated kubeadm distribution. */
export async function buildSimKubeadmPackage(
  workDir: string,
  options: SimKubeadmPackageOptions = {},
): Promise<BuiltPackage> {
  const source = join(workDir, 'sim-kubeadm-src');
  const files: Record<string, string> = {
    'bin/kubeadm': simExecutableScript('kubeadm', SIM_KUBEADM_MARKER, README),
    'bin/kubelet': simExecutableScript('kubelet', SIM_KUBEADM_MARKER, README),
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
    'images/README': `${SIM_KUBEADM_MARKER}: no airgap images in the simulation.\n`,
    ...(options.withEdgeadm ? { 'bin/edgeadm': edgeadmFromSourceScript() } : {}),
  };
  for (const [path, text] of Object.entries(files)) {
    const target = join(source, path);
    await mkdir(join(target, '..'), { recursive: true });
    await writeFile(target, text);
    if (!path.startsWith('images/')) await chmod(target, 0o755);
  }
  execFileSync('tar', ['-cf', join(source, 'images', 'sim-pause.tar'), '-C', join(source, 'images'), 'README']);
  return buildPackage({
    from: source,
    distribution: 'kubeadm',
    kubernetesVersion: 'v1.30.4',
    arch: 'amd64',
    name: options.withEdgeadm ? 'edge-kubeadm-v1.30.4-amd64-sim-edgeadm' : 'edge-kubeadm-v1.30.4-amd64-sim',
    output: join(workDir, options.withEdgeadm ? 'sim-kubeadm-edgeadm.tar.gz' : 'sim-kubeadm.tar.gz'),
    createdAt: new Date('2024-05-01T12:00:00Z'),
  });
}
