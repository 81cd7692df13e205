/**
 * The distributions the behaviour suites run for, each as a small
 * descriptor: its name, how to build an install package with its
 * SIMULATION (test/support/sim-k3s, test/support/sim-kubeadm; neither is
 * the real thing), the flag that chooses it, and the files, units and
 * phase outcomes a suite may expect of it. A suite written once with
 * `describe.each(DISTRIBUTIONS)` runs for both; what only one distribution
 * does stays in that distribution's own suite.
 */
import type { BuiltPackage } from '../../src/packages/build.js';
import { buildSimK3sPackage } from './sim-k3s/fixture.js';
import { buildSimKubeadmPackage } from './sim-kubeadm/fixture.js';

/** The distributions edgeadm installs. */
export type DistributionName = 'k3s' | 'kubeadm';

/** One distribution, as the behaviour suites see it. */
export interface TestDistribution {
  name: DistributionName;
  /** The flags that choose it on `init` (k3s is the default and is not named). */
  initFlags: readonly string[];
  /** How a printed join command ends after its package and edge words: kubeadm names itself, k3s does not. */
  joinCommandDistributionWords: string;
  /** Sources the CLI build and the simulation depend on (for `ensureCliBuilt`). */
  sources: readonly string[];
  /** An install package with the simulation; `withEdgeadm` also ships this tree's edgeadm. */
  buildPackage(workDir: string, options?: { withEdgeadm?: boolean }): Promise<BuiltPackage>;
  /** The binary the package installs first, under /usr/local/bin. */
  mainBinary: string;
  /** The unit a joined node (not a control plane) runs its node agent as. */
  nodeUnit: string;
  /** How `runtime` ends on a first install: k3s carries its own runtime (skipped), kubeadm installs containerd. */
  runtimeOnInstall: 'skipped' | 'changed';
  /** How long one CLI run may take on 2 busy cores (kubeadm starts several simulated services). */
  cliTimeoutMs: number;
  /** How long one test may take (a test may run the CLI on several hosts). */
  testTimeoutMs: number;
}

/** The simulated k3s: the default distribution. */
export const K3S: TestDistribution = {
  name: 'k3s',
  initFlags: [],
  joinCommandDistributionWords: '',
  sources: ['src', 'test/support/sim-k3s'],
  buildPackage: (workDir, options) => buildSimK3sPackage(workDir, options),
  mainBinary: '/usr/local/bin/k3s',
  nodeUnit: '/etc/systemd/system/k3s-agent.service',
  runtimeOnInstall: 'skipped',
  cliTimeoutMs: 180_000,
  testTimeoutMs: 600_000,
};

/** The simulated kubeadm distribution: stand-in kubeadm, kubelet and containerd. */
export const KUBEADM: TestDistribution = {
  name: 'kubeadm',
  initFlags: ['--distribution', 'kubeadm'],
  joinCommandDistributionWords: ' --distribution kubeadm',
  sources: ['src', 'test/support/sim-kubeadm'],
  buildPackage: (workDir, options) => buildSimKubeadmPackage(workDir, options),
  mainBinary: '/usr/local/bin/kubeadm',
  nodeUnit: '/etc/systemd/system/kubelet.service',
  runtimeOnInstall: 'changed',
  cliTimeoutMs: 240_000,
  testTimeoutMs: 600_000,
};

/** Every distribution a behaviour suite runs for. */
export const DISTRIBUTIONS: readonly TestDistribution[] = [K3S, KUBEADM];
