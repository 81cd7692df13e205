/**
 * The differential check of `package verify` against GNU tar: for each
 * generated hostile archive that verify accepts, GNU tar (the command the
 * hosts run: `tar -xzf PKG --no-same-owner -C DIR`) must write exactly the
 * manifest's files, with the manifest's bytes and modes, their parent
 * directories, and nothing else, and exit 0.
 *
 * GNU tar runs once per batch: one shell loops over the accepted archives of
 * the batch, so a few thousand cases cost a few hundred process starts, not
 * thousands. The shell runs with umask 0 so that modes come out as the
 * archive says whether or not the test runs as root.
 */
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { isPackageError } from '../../src/packages/errors.js';
import { modeString } from '../../src/packages/manifest.js';
import { parentDirectories } from '../../src/packages/package-path.js';
import { verifyPackage, type VerifiedPackage } from '../../src/packages/verify.js';
import { generateHostileArchive, type HostileArchive } from './hostile-tar.js';

/** A case where verify accepted and GNU tar wrote something else. */
export interface DifferentialFailure {
  seed: number;
  steps: string[];
  problem: string;
}

/** What a run found. */
export interface DifferentialReport {
  cases: number;
  accepted: number;
  /** Refusals by error code. */
  refused: Record<string, number>;
  failures: DifferentialFailure[];
}

/** Archives extracted by one shell run of GNU tar. */
export const DIFFERENTIAL_BATCH = 250;

/** Runs seeds `first` … `first + cases - 1` through verify and, when accepted, GNU tar. */
export async function runDifferential(options: {
  first: number;
  cases: number;
  workDir: string;
}): Promise<DifferentialReport> {
  const report: DifferentialReport = { cases: 0, accepted: 0, refused: {}, failures: [] };
  for (let start = 0; start < options.cases; start += DIFFERENTIAL_BATCH) {
    const count = Math.min(DIFFERENTIAL_BATCH, options.cases - start);
    const dir = join(options.workDir, `batch-${options.first + start}`);
    await mkdir(dir, { recursive: true });
    // Verification of a batch runs concurrently: it is mostly waiting on small files.
    const archives = Array.from({ length: count }, (_, i) => generateHostileArchive(options.first + start + i));
    const outcomes = await Promise.all(
      archives.map(async (archive) => {
        const name = `case-${archive.seed}`;
        const file = join(dir, `${name}.tar.gz`);
        await writeFile(file, archive.gzip);
        try {
          return { archive, name, verified: await verifyPackage(file) };
        } catch (error) {
          if (!isPackageError(error)) throw error;
          return { archive, name, code: error.code };
        }
      }),
    );
    const accepted: Array<{ archive: HostileArchive; verified: VerifiedPackage; name: string }> = [];
    for (const outcome of outcomes) {
      report.cases += 1;
      if (outcome.verified) accepted.push({ archive: outcome.archive, verified: outcome.verified, name: outcome.name });
      else if (outcome.code) report.refused[outcome.code] = (report.refused[outcome.code] ?? 0) + 1;
    }
    report.accepted += accepted.length;
    const statuses = await extractWithGnuTar(
      dir,
      accepted.map((a) => a.name),
    );
    for (const { archive, verified, name } of accepted) {
      const problem = await compareTree(join(dir, name), verified, statuses.get(name));
      if (problem) report.failures.push({ seed: archive.seed, steps: archive.steps, problem });
    }
    await rm(dir, { recursive: true, force: true });
  }
  return report;
}

/** Extracts `<dir>/<name>.tar.gz` into `<dir>/<name>/` for every name, in one shell; returns each tar's exit status and stderr. */
async function extractWithGnuTar(
  dir: string,
  names: string[],
): Promise<Map<string, { status: number; stderr: string }>> {
  const statuses = new Map<string, { status: number; stderr: string }>();
  if (names.length === 0) return statuses;
  const script = [
    'umask 0',
    'for name in "$@"; do',
    '  mkdir "$name"',
    '  tar -xzf "$name.tar.gz" --no-same-owner -C "$name" 2>"$name.stderr"',
    '  echo "$name $?"',
    'done',
  ].join('\n');
  const result = await execa('sh', ['-c', script, 'sh', ...names], { cwd: dir, reject: false });
  for (const line of result.stdout.split('\n')) {
    const [name, status] = line.split(' ');
    if (name && status) {
      const stderr = await readFile(join(dir, `${name}.stderr`), 'utf8').catch(() => '');
      statuses.set(name, { status: Number(status), stderr });
    }
  }
  return statuses;
}

/** Undefined when GNU tar wrote exactly what the manifest lists; else what differs. */
async function compareTree(
  root: string,
  verified: VerifiedPackage,
  tar: { status: number; stderr: string } | undefined,
): Promise<string | undefined> {
  if (tar === undefined) return 'GNU tar did not run';
  if (tar.status !== 0) return `GNU tar exited ${tar.status}: ${tar.stderr.trim()}`;
  const expected = new Map<string, string>();
  expected.set('manifest.json', `file 0644 ${verified.manifestSha256}`);
  for (const file of verified.manifest.files) {
    expected.set(file.path, `file ${file.mode} ${file.sha256}`);
    for (const parent of parentDirectories(file.path)) expected.set(parent, 'directory');
  }
  const found = new Map<string, string>();
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      const path = `${prefix}${name}`;
      const absolute = join(dir, name);
      const stats = await lstat(absolute);
      if (stats.isDirectory()) {
        found.set(path, 'directory');
        await walk(absolute, `${path}/`);
      } else if (stats.isFile()) {
        const sha = createHash('sha256')
          .update(await readFile(absolute))
          .digest('hex');
        found.set(path, `file ${modeString(stats.mode)}${(stats.mode & ~0o170777) !== 0 ? '+special' : ''} ${sha}`);
      } else {
        found.set(path, `other (mode ${stats.mode.toString(8)})`);
      }
    }
  };
  await walk(root, '');
  const problems: string[] = [];
  for (const [path, want] of expected) {
    const got = found.get(path);
    if (got !== want) problems.push(`${path}: expected ${want}, found ${got ?? 'nothing'}`);
  }
  for (const [path, got] of found) if (!expected.has(path)) problems.push(`${path}: unexpected ${got}`);
  return problems.length === 0 ? undefined : problems.join('; ');
}
