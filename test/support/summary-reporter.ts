/**
 * A vitest reporter that ends the run with the slowest files and one plain
 * line, `tests: N passed, N failed, N skipped`, which CI logs and scripts can
 * read without parsing vitest's decorated output. Every file's time (its
 * tests and hooks, its import and collection) is written to
 * `reports/test-durations.json`, slowest first: TESTING.md's table of the
 * slowest files is read from it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/** How many of the slowest files the run ends with. */
const SLOWEST_SHOWN = 10;
const DURATIONS_FILE = 'reports/test-durations.json';

/** One file's time in a run. */
export interface FileDuration {
  file: string;
  /** Its tests and hooks plus its import and collection, in seconds. */
  seconds: number;
  tests: number;
}

/** The files of a run with their times, slowest first. */
export function fileDurations(testModules: ReadonlyArray<TestModule>, root: string): FileDuration[] {
  return testModules
    .map((module) => {
      const d = module.diagnostic();
      return {
        file: relative(root, module.moduleId),
        seconds: Math.round((d.duration + d.collectDuration + d.setupDuration) / 100) / 10,
        tests: [...module.children.allTests()].length,
      };
    })
    .sort((a, b) => b.seconds - a.seconds);
}

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else counts.skipped++;
      }
      // A file that failed to load has no tests but must count as a failure.
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) counts.failed++;
    }
    const durations = fileDurations(testModules, process.cwd());
    mkdirSync('reports', { recursive: true });
    writeFileSync(DURATIONS_FILE, `${JSON.stringify(durations, null, 1)}\n`);
    const slowest = durations.slice(0, SLOWEST_SHOWN);
    if (slowest.length > 1) {
      process.stdout.write(`\nslowest files (all ${durations.length} in ${DURATIONS_FILE}):\n`);
      for (const { file, seconds } of slowest) process.stdout.write(`  ${seconds.toFixed(1).padStart(7)} s  ${file}\n`);
    }
    process.stdout.write(`\ntests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
  }
}
