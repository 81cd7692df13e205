import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DryRunHost } from '../../../src/hosts/dry-run-host.js';
import { execOrThrow } from '../../../src/hosts/host.js';
import { LocalHost } from '../../../src/hosts/local-host.js';

/** Every directory this file makes lives here, and goes when the file is done. */
const scratch = mkdtempSync(join(tmpdir(), 'eadm-dry-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('DryRunHost', () => {
  it('records every command and upload with a description, and changes nothing', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const target = join(dir, 'k3s');
    const host = new DryRunHost({ name: 'root@10.0.0.5:22' });
    await execOrThrow(host, `mkdir -p ${dir}/etc`, { sudo: true, description: 'create the configuration directory' });
    await host.exec(`touch ${dir}/flag`);
    const put = await host.put(Buffer.from('binary'), target, { mode: 0o755, owner: 'root:root', sudo: true });
    expect(put).toMatchObject({ dryRun: true, skipped: false, bytesSent: 0 });

    expect(host.plan).toEqual([
      {
        step: 1,
        kind: 'exec',
        description: 'create the configuration directory',
        isSudo: true,
        command: `mkdir -p ${dir}/etc`,
      },
      { step: 2, kind: 'exec', description: `run: touch ${dir}/flag`, isSudo: false, command: `touch ${dir}/flag` },
      {
        step: 3,
        kind: 'put',
        description: `write ${target} (6 bytes, mode 0755, owner root:root)`,
        isSudo: true,
        path: target,
        mode: '0755',
        owner: 'root:root',
        size: 6,
        sha256: createHash('sha256').update('binary').digest('hex'),
      },
    ]);
    expect(host.renderPlan()).toEqual([
      '[1] Would create the configuration directory (as root)',
      `[2] Would run: touch ${dir}/flag`,
      `[3] Would write ${target} (6 bytes, mode 0755, owner root:root) (as root)`,
    ]);
    const local = new LocalHost();
    expect(await local.exists(`${dir}/etc`)).toBe(false);
    expect(await local.exists(`${dir}/flag`)).toBe(false);
    expect(await local.exists(target)).toBe(false);
  });

  it('answers reads as "nothing there" without a host to read from', async () => {
    const host = new DryRunHost();
    expect(await host.exists('/etc/edgeadm')).toBe(false);
    expect(await host.stat('/etc/edgeadm')).toBeUndefined();
    expect(await host.sha256('/etc/edgeadm/x')).toBeUndefined();
    expect(await host.exec('cat /etc/os-release', { readOnly: true })).toMatchObject({
      exitCode: 0,
      stdout: '',
      dryRun: true,
    });
    await expect(host.facts()).rejects.toMatchObject({ code: 'E_DRY_RUN_NO_HOST' });
    expect(host.plan).toEqual([]);
  });

  it('answers reads from a real host, and marks uploads whose content is already there', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    writeFileSync(join(dir, 'same'), 'content');
    writeFileSync(join(dir, 'source'), 'content');
    const host = new DryRunHost({ fallback: new LocalHost() });
    expect(host.name).toBe('local');
    expect((await host.exec(`cat ${dir}/same`, { readOnly: true })).stdout).toBe('content');
    expect(await host.exists(join(dir, 'same'))).toBe(true);
    const same = await host.put(join(dir, 'source'), join(dir, 'same'));
    const other = await host.put(Buffer.from('new'), join(dir, 'other'));
    expect(same).toMatchObject({ skipped: true, dryRun: true });
    expect(other).toMatchObject({ skipped: false, dryRun: true });
    expect(host.renderPlan()).toEqual([
      `[1] Would skip (unchanged): write ${join(dir, 'same')} from ${join(dir, 'source')} (7 bytes, mode 0644)`,
      `[2] Would write ${join(dir, 'other')} (3 bytes, mode 0644)`,
    ]);
    expect(await new LocalHost().exists(join(dir, 'other'))).toBe(false);
  });
});
