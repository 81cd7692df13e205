import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Integration suites start network namespaces and sshd processes as root:
    // files run in parallel, each file's tests in order.
    pool: 'forks',
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
