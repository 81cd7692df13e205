import { defineConfig } from 'vitest/config';

/**
 * Suites that run on their own, after the rest (`npm test` runs both): the
 * SSH transfer suite drops a live 48 MiB upload mid-way and resumes it, and
 * next to the 20-host fleet and cluster suites it has hung until its time
 * limit, while alone it passes in seconds. The cause is not found yet.
 */
const RUN_ALONE = ['test/integration/hosts/ssh-host.test.ts'];
const isAloneRun = process.env['EDGEADM_TEST_RUN_ALONE'] === '1';

export default defineConfig({
  test: {
    include: isAloneRun ? RUN_ALONE : ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
    exclude: isAloneRun ? [] : RUN_ALONE,
    // Generous: integration tests drive real sshd hosts and processes, and CI machines are shared.
    testTimeout: 90_000,
    hookTimeout: 120_000,
    // Integration suites start network namespaces and sshd processes as root:
    // files run in parallel, each file's tests in order.
    pool: 'forks',
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
