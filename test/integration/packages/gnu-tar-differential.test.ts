/**
 * `package verify` against the real GNU tar that unpacks packages on the
 * hosts: what verify accepts, GNU tar must unpack to exactly the manifest's
 * files. First the three archives of the issue (each accepted by verify
 * before, each making GNU tar install other bytes as bin/k3s), then a seeded
 * generator of their families. More cases: scripts/fuzz-package.ts.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPackageError } from '../../../src/packages/errors.js';
import { verifyPackage } from '../../../src/packages/verify.js';
import { EVIL_K3S, GOOD_K3S, ISSUE_TRICKS } from '../../support/hostile-tar.js';
import { runDifferential } from '../../support/tar-differential.js';

/** Cases per CI run, and the first seed; a failure names its seed, which the fuzz script replays. */
const DIFFERENTIAL_CASES = 3000;
const FIRST_SEED = 1;

let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'edgeadm-gnu-tar-'));
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

describe('the archives of the issue that made GNU tar install unverified bytes', () => {
  it.each(Object.entries(ISSUE_TRICKS))(
    '%s: GNU tar installs other bytes as bin/k3s, and verify refuses it',
    async (name, make) => {
      const file = join(work, `${name.replace(/\W+/g, '-')}.tar.gz`);
      await writeFile(file, make());
      // The trick is real: GNU tar, as the hosts run it, leaves the evil bytes in bin/k3s.
      const out = join(work, `${name.replace(/\W+/g, '-')}-out`);
      await mkdir(out);
      await execa('tar', ['-xzf', file, '--no-same-owner', '-C', out], { reject: false });
      expect(sha256(await readFile(join(out, 'bin', 'k3s')))).toBe(sha256(EVIL_K3S));
      expect(sha256(EVIL_K3S)).not.toBe(sha256(GOOD_K3S));

      const error = await verifyPackage(file).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(isPackageError(error), `verify accepted ${name}`).toBe(true);
    },
  );
});

describe('generated hostile archives: what verify accepts, GNU tar unpacks to exactly the manifest', () => {
  it(`${DIFFERENTIAL_CASES} seeded cases`, async () => {
    const report = await runDifferential({ first: FIRST_SEED, cases: DIFFERENTIAL_CASES, workDir: work });
    expect(report.failures.slice(0, 5)).toEqual([]);
    expect(report.cases).toBe(DIFFERENTIAL_CASES);
    // The generator must reach both sides: enough accepted archives to test GNU tar on,
    // and refusals of many kinds.
    expect(report.accepted).toBeGreaterThan(DIFFERENTIAL_CASES / 10);
    expect(Object.keys(report.refused).length).toBeGreaterThanOrEqual(5);
  }, 120_000);
});
