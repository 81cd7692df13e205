/**
 * The test-host harness's slot claims (test/support/test-hosts.ts): test
 * files running at once, and other checkouts' runs on the same machine,
 * each claim a slot and sweep the slots of dead owners before they start.
 * A claim must never look dead to another process's sweep, not even while
 * it is being made; otherwise the sweep deletes it, a third harness takes
 * the same slot, and two harnesses share namespace names and addresses.
 *
 * Several processes claim, sweep (as a harness start does) and release
 * slots in a private state directory, concurrently; each checks after every
 * sweep that its own claim is still there and still its own.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../support/cli.js';

const run = promisify(execFile);

/** Processes claiming at once, and the rounds each makes. */
const PROCESSES = 4;
const ROUNDS = 400;

const CLAIMER = `
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
const { claimSlot, releaseSlot, staleSlots } = await import(process.argv[1]);
const stateDir = process.argv[2];
const rounds = Number(process.argv[3]);
const problems = [];
for (let round = 0; round < rounds; round += 1) {
  let slot;
  try {
    slot = claimSlot('/nonexistent/claimer', stateDir);
  } catch (error) {
    problems.push('claim failed: ' + error.message);
    continue;
  }
  // What every harness start does before it claims: delete the slots of dead owners.
  for (const stale of staleSlots(stateDir)) {
    try {
      rmSync(join(stateDir, 'slot-' + stale), { recursive: true, force: true });
    } catch (error) {
      problems.push('a live claim was swept while it was being made: ' + error.code);
    }
  }
  const ownerFile = join(stateDir, 'slot-' + slot, 'owner.json');
  let owner;
  try {
    owner = JSON.parse(readFileSync(ownerFile, 'utf8'));
  } catch {
    owner = undefined;
  }
  if (owner?.pid !== process.pid) problems.push('slot ' + slot + ' was swept or taken while claimed');
  else {
    try {
      releaseSlot(slot, stateDir);
    } catch (error) {
      problems.push('slot ' + slot + ' was being swept while its owner released it: ' + error.code);
    }
  }
}
console.log(JSON.stringify(problems.slice(0, 5)));
`;

describe('test host slot claims', () => {
  it('are never swept as stale by concurrent harness starts, nor shared', async () => {
    const stateDir = join(mkdtempSync(join(tmpdir(), 'edgeadm-slot-claims-')), 'state');
    const module = pathToFileURL(join(REPO_ROOT, 'test/support/test-hosts.ts')).href;
    const results = await Promise.all(
      Array.from({ length: PROCESSES }, () =>
        run(process.execPath, ['--input-type=module', '-e', CLAIMER, module, stateDir, String(ROUNDS)], {
          encoding: 'utf8',
        }),
      ),
    );
    const problems = results.flatMap((result) => JSON.parse(result.stdout) as string[]);
    expect(problems).toEqual([]);
  }, 120_000);
});
