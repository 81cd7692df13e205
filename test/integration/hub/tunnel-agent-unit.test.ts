/**
 * The tunnel agent's systemd unit, checked by the real `systemd-analyze
 * verify` with its template values filled in.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../support/cli.js';

const UNIT = join(REPO_ROOT, 'assets/systemd/edgeadm-tunnel-agent.service');
const hasSystemdAnalyze = existsSync('/usr/bin/systemd-analyze');

describe('edgeadm-tunnel-agent.service', () => {
  const rendered = readFileSync(UNIT, 'utf8')
    .replaceAll('{{EDGEADM_BIN}}', '/usr/bin/env')
    .replaceAll('{{DATA_DIR}}', '/var/lib/edgeadm/agent');

  it('runs `agent tunnel` on the data dir and restarts on crashes', () => {
    expect(rendered).toMatch(/^ExecStart=\/usr\/bin\/env agent tunnel --data-dir \/var\/lib\/edgeadm\/agent$/m);
    expect(rendered).toMatch(/^Restart=always$/m);
    expect(rendered).not.toContain('{{');
  });

  it.skipIf(!hasSystemdAnalyze)('passes systemd-analyze verify', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'unit-')), 'edgeadm-tunnel-agent.service');
    writeFileSync(path, rendered);
    const output = execFileSync('systemd-analyze', ['verify', path], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(output).toBe('');
  });
});
