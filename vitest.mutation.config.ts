import { defineConfig } from 'vitest/config';

/**
 * The vitest configuration of `npm run mutation`: unit tests only. Each
 * mutant is judged by the tests that cover it, and the unit suite runs in
 * seconds; the integration suite (network namespaces, sshd, processes) would
 * make one mutation run take hours on a shared machine.
 */
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    testTimeout: 30_000,
    pool: 'forks',
  },
});
