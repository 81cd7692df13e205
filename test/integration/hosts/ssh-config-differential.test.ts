/**
 * edgeadm resolves ssh configs as OpenSSH does: 500 seeded configurations,
 * three typed hosts each, resolved by edgeadm and by the real `ssh -G -F FILE
 * HOST` (and `ssh -v` for the key files it loads), compared on user, host
 * name, port, key files and every hop of the jump chain. Any difference fails
 * with the smallest configuration that still shows it.
 * scripts/fuzz-ssh-configs.ts runs more seeds.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  edgeadmSshOutcome,
  formatSshFailure,
  opensshOutcome,
  runSshConfigDifferential,
} from '../../support/differential/ssh-config-differential.js';

describe('ssh config: edgeadm against ssh -G', () => {
  let work: string;
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'ssh-differential-'));
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it('agrees on the cases the issue reported', async () => {
    const config = join(work, 'reported');
    const include = join(work, 'reported-inc');
    await writeFile(include, 'Host *\n  User included\n');
    await writeFile(
      config,
      [
        'Host db*',
        `  Include ${include}`,
        'Host web1',
        '  HostName Web-%h.Example.COM',
        '  User cfg',
        '  IdentityFile ~/.ssh/id_%r_%h',
        '  ProxyJump jumpa,jumpb',
        'Host jumpb',
        '  ProxyJump jumpc',
        '',
      ].join('\n'),
    );
    for (const typed of ['web1', 'WEB1', 'typed@web1', 'store-1', 'db1']) {
      const openssh = await opensshOutcome(config, typed);
      expect(edgeadmSshOutcome(config, typed), typed).toEqual(openssh);
    }
    // `ProxyJump jumpa,jumpb`: ssh runs jumpb with -J jumpa, so jumpb's own ProxyJump is not followed.
    expect(edgeadmSshOutcome(config, 'web1')).toMatchObject({ jumps: [{ host: 'jumpa' }, { host: 'jumpb' }] });
    await writeFile(config, 'Host elsewhere\n  Port 0x10\n');
    expect(await opensshOutcome(config, 'web1')).toMatchObject({ kind: 'error' });
    expect(edgeadmSshOutcome(config, 'web1')).toMatchObject({ kind: 'error', message: /Bad port '0x10'/ });
  });

  it('500 generated configurations resolve alike for every typed host, or both refuse them', async () => {
    const report = await runSshConfigDifferential({ first: 1, cases: 500, workDir: work });
    const shown = report.failures.map(formatSshFailure).join('\n');
    expect(report.failures, shown).toEqual([]);
    expect(report.lookups).toBe(1500);
    // Refusals agree too, but the generator must mostly make hosts to compare.
    expect(report.refusals).toBeLessThan(report.lookups / 2);
  }, 240_000);
});
