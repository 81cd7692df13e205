// The opt-in e2e suite has its own config: the default one only runs unit and integration tests.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/e2e/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
  },
});
