import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
    // Generous: integration tests drive real sshd hosts and processes, and CI machines are shared.
    testTimeout: 90_000,
    hookTimeout: 120_000,
    // Integration suites start network namespaces and sshd processes as root:
    // files run in parallel, each file's tests in order.
    pool: 'forks',
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
