/**
 * vitest global set-up: one temporary directory per test run, given to every
 * test and every process it starts as TMPDIR, and removed when the run ends.
 * The suites make many temporary homes, kubeconfigs and data directories;
 * this way a run leaves nothing behind in /tmp, however a test cleans up.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Creates the run's directory and points TMPDIR at it; returns the teardown that removes it. */
export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'edgeadm-test-run-'));
  // Like /tmp itself: processes a test runs as another user can make their own files here too.
  chmodSync(root, 0o1777);
  process.env['TMPDIR'] = root;
  return () => rmSync(root, { recursive: true, force: true });
}
