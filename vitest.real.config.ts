import { defineConfig } from 'vitest/config';

// The real-Kubernetes lane (test/real/README.md): upstream kubeadm, kubelet and
// control plane built from their Go modules, real containerd and runc pods, on
// the network-namespace test hosts. One file at a time: each runs a cluster.
// Run by `npm run test:real` after the single binary is built (EDGEADM_BIN).
export default defineConfig({
  test: {
    include: ['test/real/**/*.test.ts'],
    testTimeout: 20 * 60_000,
    hookTimeout: 10 * 60_000,
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    globalSetup: ['./test/support/test-temp-root.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
