/**
 * Two checkouts' suites on one machine: each claims test-host slots and
 * sweeps what dead runs left in the machine's one state directory
 * (/run/edgeadm-test-hosts). Two processes, one importing the harness from
 * this checkout and one from a second checkout (a copy in a directory of
 * its own), each keep hosts up while they start and tear down others again
 * and again, beside a run that crashes and leaves its hosts behind; neither
 * may lose a host to the other's sweeps, and no two may share a slot.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../support/cli.js';
import { TEST_HOSTS_PREFIX } from '../../support/test-hosts.js';

/** Rounds of start, check and teardown each checkout makes while its long-lived hosts run. */
const ROUNDS = 4;

/** What each checkout's process runs: its problems, one JSON line. */
const KEEPER = `
const { startTestHosts } = await import(process.argv[1]);
const rounds = Number(process.argv[2]);
const problems = [];
const kept = await startTestHosts({ count: 2 });
const slotOf = (env) => env.hosts[0].netns.split('-')[0];
async function checkKept(when) {
  for (const host of kept.hosts) {
    try {
      const name = (await kept.run(host, 'hostname')).trim();
      if (name !== host.name) problems.push(when + ': ' + host.netns + ' answers as ' + name);
    } catch (error) {
      problems.push(when + ': ' + host.netns + ' is lost: ' + error.message.split('\\n')[0]);
    }
  }
}
const slots = [slotOf(kept)];
for (let round = 0; round < rounds; round += 1) {
  const other = await startTestHosts({ count: 1 });
  slots.push(slotOf(other));
  if (slotOf(other) === slotOf(kept)) problems.push('round ' + round + ': a second harness got the kept slot');
  await checkKept('round ' + round + ', beside another harness');
  await other.teardown();
  await checkKept('round ' + round + ', after its teardown');
}
await kept.teardown();
console.log(JSON.stringify({ problems, slots }));
`;

/** A run that starts hosts and dies without tearing them down. */
const CRASHER = `
const { startTestHosts } = await import(process.argv[1]);
await startTestHosts({ count: 1 });
process.kill(process.pid, 'SIGKILL');
`;

function runNode(script: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A second checkout of the harness: the module and the package.json that marks a checkout's root. */
function secondCheckout(): string {
  const root = mkdtempSync(join(tmpdir(), 'edgeadm-second-checkout-'));
  mkdirSync(join(root, 'test/support'), { recursive: true });
  copyFileSync(join(REPO_ROOT, 'test/support/test-hosts.ts'), join(root, 'test/support/test-hosts.ts'));
  writeFileSync(join(root, 'package.json'), '{ "type": "module" }\n');
  return root;
}

describe('test hosts of two checkouts at once', () => {
  it('lose no host to each other, nor share a slot, beside a crashed run being swept', async () => {
    const second = secondCheckout();
    try {
      const modules = [join(REPO_ROOT, 'test/support/test-hosts.ts'), join(second, 'test/support/test-hosts.ts')];
      const [first, other, crashed] = await Promise.all([
        runNode(KEEPER, [modules[0]!, String(ROUNDS)]),
        runNode(KEEPER, [modules[1]!, String(ROUNDS)]),
        runNode(CRASHER, [modules[1]!]),
      ]);
      expect(crashed.code, crashed.stderr).toBeNull();
      const results = [first, other].map((run) => {
        expect(run.code, run.stderr).toBe(0);
        return JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { problems: string[]; slots: string[] };
      });
      expect(results.flatMap((result) => result.problems)).toEqual([]);
      // Every harness had its own slot while it lived: the kept ones never share with anything the other made.
      const [firstSlots, otherSlots] = results.map((result) => result.slots) as [string[], string[]];
      expect(otherSlots).not.toContain(firstSlots[0]);
      expect(firstSlots).not.toContain(otherSlots[0]);
      expect(firstSlots.every((slot) => slot.startsWith(TEST_HOSTS_PREFIX))).toBe(true);
    } finally {
      rmSync(second, { recursive: true, force: true });
    }
  }, 300_000);
});
