// A second build of edgeadm for a benchmark's before/after comparison in one run:
// the benchmark alternates its rounds between this checkout and the baseline, so
// that the load of a shared machine falls on both alike.
//
//   --baseline DIR        a checkout that is already built (`npm run build`, and
//                         `npm run build:binary` where the binary is measured)
//   --baseline GIT-REF    that commit of this repository, exported to a scratch
//                         directory and built there with this checkout's
//                         node_modules (so the two builds must share their
//                         dependencies; the lock files are compared and a
//                         difference is reported). Built once per commit and kept
//                         in the scratch directory for the next run.
import { execFileSync, execSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Finds or builds the baseline named by `spec`.
 *
 * @param {string} spec a built checkout's directory, or a git ref of this repository
 * @param {{ isBinaryWanted?: boolean }} [options] also build the single binary
 * @returns {{ label: string, dir: string, runJs: string, binary: string }}
 */
export function prepareBaseline(spec, options = {}) {
  const binaryOf = (dir) => join(dir, 'dist', `edgeadm-linux-${process.arch}`);
  if (existsSync(spec) && statSync(spec).isDirectory()) {
    const dir = resolve(spec);
    if (!existsSync(join(dir, 'lib'))) throw new Error(`${dir} is not built: run "npm run build" there first`);
    if (options.isBinaryWanted && !existsSync(binaryOf(dir))) {
      throw new Error(`${binaryOf(dir)} is missing: run "npm run build:binary" in ${dir} first`);
    }
    return { label: dir, dir, runJs: join(dir, 'bin', 'run.js'), binary: binaryOf(dir) };
  }
  const commit = execFileSync('git', ['-C', ROOT, 'rev-parse', '--verify', `${spec}^{commit}`], {
    encoding: 'utf8',
  }).trim();
  const dir = join(tmpdir(), `edgeadm-baseline-${commit.slice(0, 12)}`);
  const label = `${spec} (${commit.slice(0, 12)})`;
  if (!existsSync(join(dir, '.edgeadm-built'))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    execSync(`git -C '${ROOT}' archive ${commit} | tar -x -C '${dir}'`);
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    if (
      readFileSync(join(dir, 'package-lock.json'), 'utf8') !== readFileSync(join(ROOT, 'package-lock.json'), 'utf8')
    ) {
      console.warn(
        `baseline ${label}: its package-lock.json differs from this checkout's; built with this one's node_modules`,
      );
    }
    execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    writeFileSync(join(dir, '.edgeadm-built'), `${commit}\n`);
  }
  if (options.isBinaryWanted && !existsSync(binaryOf(dir))) {
    execFileSync(process.execPath, ['scripts/build-binary.js'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return { label, dir, runJs: join(dir, 'bin', 'run.js'), binary: binaryOf(dir) };
}
