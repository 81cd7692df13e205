import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { ensurePinnedKubectl, PINNED_KUBECTL_DIR } from './test/support/pinned-kubectl.js';

// Every suite runs the one pinned kubectl, whatever this machine has on PATH
// (edgeadm's own `kubectl` command finds it on PATH like a user's would).
const kubectl = ensurePinnedKubectl();
const COMPILE_CACHE_DIR = fileURLToPath(new URL('./node_modules/.cache/edgeadm-test-compile-cache', import.meta.url));

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
    // Generous: integration tests drive real sshd hosts and processes, and CI machines are shared.
    testTimeout: 90_000,
    hookTimeout: 120_000,
    // Integration suites start network namespaces and sshd processes as root:
    // files run in parallel, each file's tests in order.
    pool: 'forks',
    // Two files at a time, also on the 2-core CI machine (vitest's default there is one): most of a
    // suite's time is spent waiting on sshd hosts, simulated API servers, etcd and child processes, not
    // on the CPU. One at a time the files add up to about 24 minutes. The suites that failed under that
    // load were made robust (a test-host slot claim that a concurrent harness start could sweep; an
    // etcd read cache emptied by a late watch event), not made slower.
    maxWorkers: 2,
    env: {
      PATH: `${PINNED_KUBECTL_DIR}:${process.env['PATH'] ?? ''}`,
      EDGEADM_TEST_KUBECTL: kubectl,
      // The suites start edgeadm from the source tree thousands of times, each start compiling the same
      // modules again: Node's compile cache keeps the compiled code (checked against the source, so a
      // rebuilt lib/ is compiled afresh). Not for the single binary, which runs as users get it.
      ...(process.env['EDGEADM_BIN'] ? {} : { NODE_COMPILE_CACHE: COMPILE_CACHE_DIR }),
    },
    globalSetup: ['./test/support/test-temp-root.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
