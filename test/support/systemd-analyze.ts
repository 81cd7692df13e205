/**
 * The real `systemd-analyze` on a unit as edgeadm renders it: `verify`
 * (every warning counts, stderr included: systemd ignores a bad line with a
 * warning and still exits 0) and `security --offline` (the exposure level,
 * read from the unit file under a scratch root; no running systemd needed).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './cli.js';

/** Whether systemd-analyze is installed (Debian's `systemd` package). */
export const hasSystemdAnalyze = existsSync('/usr/bin/systemd-analyze');

/** Everything `systemd-analyze verify` said about the unit (empty when it found nothing). */
export function verifyUnit(name: string, text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'unit-')), name);
  writeFileSync(path, text);
  const run = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8' });
  return `${run.stdout}${run.stderr}`.trim();
}

/** `systemd-analyze security --offline` of the unit: its overall exposure level (0.0 to 10.0) and the report. */
export function unitExposure(name: string, text: string): { exposure: number; report: string } {
  const root = mkdtempSync(join(tmpdir(), 'unit-root-'));
  mkdirSync(join(root, 'etc/systemd/system'), { recursive: true });
  writeFileSync(join(root, 'etc/systemd/system', name), text);
  const run = spawnSync('systemd-analyze', ['security', '--offline=true', `--root=${root}`, '--no-pager', name], {
    encoding: 'utf8',
  });
  const report = `${run.stdout}${run.stderr}`;
  const match = /Overall exposure level for \S+: (\d+\.\d)/.exec(report);
  if (run.status !== 0 || match === null) throw new Error(`systemd-analyze security failed:\n${report}`);
  return { exposure: Number(match[1]), report };
}

/**
 * The exposure level the agent units guide records for a unit, in its
 * table (`| edgeadm-….service | 1.3 | …`).
 */
export function recordedExposure(name: string): number {
  const readme = readFileSync(join(REPO_ROOT, 'docs', 'guides', 'agent-units.md'), 'utf8');
  const escaped = name.replace(/[.]/g, '\\.');
  const match = new RegExp(`^\\| \`${escaped}\`\\s*\\| (\\d+\\.\\d) `, 'm').exec(readme);
  if (match === null) throw new Error(`docs/guides/agent-units.md records no exposure level for ${name}`);
  return Number(match[1]);
}
