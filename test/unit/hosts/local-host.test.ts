/**
 * LocalHost on this machine, in a scratch directory: the shared shell-based
 * Host behaviour (exec results, timeouts, uploads with skip and resume,
 * downloads, file queries) without any SSH in between.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { FACTS_SCRIPT } from '../../../src/hosts/facts.js';
import { SMALL_PUT_MAX_BYTES } from '../../../src/hosts/file-transfer.js';
import { HostCommandError, execOrThrow } from '../../../src/hosts/host.js';
import { LocalHost } from '../../../src/hosts/local-host.js';

/** Every directory this file makes lives here, and goes when the file is done. */
const scratch = mkdtempSync(join(tmpdir(), 'eadm-local-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');
const host = new LocalHost();

/** Records the scripts a host runs (every command, whichever Host method sent it). */
function recordCommands(target: LocalHost): { scripts: string[]; restore: () => void } {
  const scripts: string[] = [];
  const spy = vi.spyOn(target as unknown as { runRaw: (command: { argv: string[] }) => Promise<unknown> }, 'runRaw');
  const original = spy.getMockImplementation();
  spy.mockImplementation(function (this: unknown, command: { argv: string[] }) {
    scripts.push(command.argv.join(' '));
    return (original ?? (LocalHost.prototype as unknown as { runRaw: (c: unknown) => Promise<unknown> }).runRaw).call(
      target,
      command,
    );
  });
  return { scripts, restore: () => spy.mockRestore() };
}

describe('LocalHost exec', () => {
  it('returns exit code and both outputs, also on failure', async () => {
    expect(await host.exec('echo out; echo err >&2; exit 4')).toMatchObject({
      command: 'echo out; echo err >&2; exit 4',
      exitCode: 4,
      stdout: 'out\n',
      stderr: 'err\n',
    });
    await expect(execOrThrow(host, 'exit 9')).rejects.toBeInstanceOf(HostCommandError);
  });

  it('stops a command and its children at the timeout', async () => {
    const marker = `sleep 41.${process.pid}`;
    const late = join(mkdtempSync(join(scratch, 'case-')), 'late');
    // The child would write `late` when its sleep ends: a host that waited for it, or left it running, shows.
    const result = await host.exec(`(${marker}; echo late > ${late}) & wait`, { timeoutMs: 200 });
    expect(result).toMatchObject({ timedOut: true, exitCode: null });
    expect(await host.exists(late)).toBe(false);
    const left = await host.exec(
      `cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c '${marker.replace('.', '[.]')}'`,
    );
    expect(left.stdout.trim()).toBe('0');
  });

  it('keeps the tail of very long output and says it cut the start', async () => {
    const result = await host.exec('head -c 5000000 /dev/zero | tr "\\0" a; echo END');
    expect(result.truncated).toBe(true);
    expect(result.stdout.endsWith('aEND\n')).toBe(true);
    expect(result.stdout.length).toBe(4 * 1024 * 1024);
  });

  it.skipIf(process.getuid?.() !== 0)('runs sudo commands directly when already root', async () => {
    expect((await host.exec('id -u', { sudo: true })).stdout.trim()).toBe('0');
  });
});

describe('LocalHost files', () => {
  it('writes through a part file, skips unchanged content and fixes the mode', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const dest = join(dir, 'sub', 'config');
    expect(await host.put(Buffer.from('v1'), dest, { mode: 0o640 })).toMatchObject({ skipped: false, bytesSent: 2 });
    expect(readFileSync(dest, 'utf8')).toBe('v1');
    expect(statSync(dest).mode & 0o777).toBe(0o640);
    expect(await host.exists(`${dest}.edgeadm-part`)).toBe(false);
    expect(await host.put(Buffer.from('v1'), dest, { mode: 0o600 })).toMatchObject({ skipped: true, bytesSent: 0 });
    expect(statSync(dest).mode & 0o777).toBe(0o600);
    expect(await host.put(Buffer.from('v2'), dest)).toMatchObject({ skipped: false });
    expect(readFileSync(dest, 'utf8')).toBe('v2');
  });

  it('sends a small file in one command and a big one in two, each checked on arrival', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const recorder = recordCommands(host);
    try {
      await host.put(Buffer.alloc(SMALL_PUT_MAX_BYTES, 1), join(dir, 'small'));
      expect(recorder.scripts).toHaveLength(1);
      expect(await host.put(Buffer.alloc(SMALL_PUT_MAX_BYTES, 1), join(dir, 'small'))).toMatchObject({ skipped: true });
      expect(recorder.scripts).toHaveLength(2);
      const big = Buffer.alloc(SMALL_PUT_MAX_BYTES + 1, 2);
      await host.put(big, join(dir, 'big'));
      expect(recorder.scripts).toHaveLength(4);
      // The command that writes the bytes also hashes them, before it renames them into place.
      for (const script of [recorder.scripts[0]!, recorder.scripts[3]!]) {
        expect(script.indexOf('sha256_of "$p"')).toBeGreaterThan(script.indexOf('cat > "$p"'));
        expect(script.indexOf('mv -f "$p"')).toBeGreaterThan(script.indexOf('sha256_of "$p"'));
      }
    } finally {
      recorder.restore();
    }
    expect(readFileSync(join(dir, 'small')).equals(Buffer.alloc(SMALL_PUT_MAX_BYTES, 1))).toBe(true);
    expect(readFileSync(join(dir, 'big')).equals(Buffer.alloc(SMALL_PUT_MAX_BYTES + 1, 2))).toBe(true);
  });

  it('keeps a part file that arrived short, and resumes from it next time', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const data = randomBytes(256 * 1024);
    const source = join(dir, 'source.bin');
    writeFileSync(source, data);
    // The source is cut short once the host has been asked what it has, so
    // the upload delivers fewer bytes than described (as a dropped link does).
    const local = new LocalHost();
    const runRaw = (LocalHost.prototype as unknown as { runRaw: (c: unknown) => Promise<unknown> }).runRaw;
    let calls = 0;
    const spy = vi
      .spyOn(local as unknown as { runRaw: (c: unknown) => Promise<unknown> }, 'runRaw')
      .mockImplementation(async (command: unknown) => {
        const outcome = await runRaw.call(local, command);
        if (++calls === 1) writeFileSync(source, data.subarray(0, 1000));
        return outcome;
      });
    const failure = await local.put(source, join(dir, 'dest.bin'), { sha256: sha256(data) }).catch((e: unknown) => e);
    spy.mockRestore();
    expect(failure).toMatchObject({ code: 'E_HOST_PUT_INCOMPLETE' });
    expect(statSync(join(dir, 'dest.bin.edgeadm-part')).size).toBe(1000);
    expect(await local.exists(join(dir, 'dest.bin'))).toBe(false);

    writeFileSync(source, data);
    const resumed = await local.put(source, join(dir, 'dest.bin'), { sha256: sha256(data) });
    expect(resumed).toMatchObject({ resumedFrom: 1000, bytesSent: data.length - 1000 });
    expect(sha256(readFileSync(join(dir, 'dest.bin')))).toBe(sha256(data));
  });

  it('resumes from a part file that is a prefix of the source', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const data = randomBytes(3 * 1024 * 1024);
    const source = join(dir, 'source.bin');
    writeFileSync(source, data);
    writeFileSync(join(dir, 'dest.bin.edgeadm-part'), data.subarray(0, 1_000_000));
    const progress: number[] = [];
    const result = await host.put(source, join(dir, 'dest.bin'), {
      onProgress: (p) => progress.push(p.resumedFrom + p.bytesTransferred),
    });
    expect(result).toMatchObject({ resumedFrom: 1_000_000, bytesSent: data.length - 1_000_000, size: data.length });
    expect(sha256(readFileSync(join(dir, 'dest.bin')))).toBe(sha256(data));
    expect(progress.at(-1)).toBe(data.length);
  });

  it('refuses to replace a directory, and rejects relative paths', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    await expect(host.put(Buffer.from('x'), dir)).rejects.toMatchObject({ code: 'E_HOST_PUT_TARGET' });
    await expect(host.put(Buffer.from('x'), 'relative/path')).rejects.toMatchObject({ code: 'E_HOST_PATH' });
  });

  it('catches a stream whose bytes do not match the SHA-256 it came with', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    const stream = new PassThrough();
    stream.end('actual bytes');
    await expect(host.put(stream, join(dir, 'f'), { sha256: sha256('other bytes') })).rejects.toMatchObject({
      code: 'E_HOST_PUT_CHECKSUM',
    });
    expect(await host.exists(join(dir, 'f'))).toBe(false);
    expect(await host.exists(join(dir, 'f.edgeadm-part'))).toBe(false);
  });

  it('downloads to a local path via a temporary name, and reports stat and sha256', async () => {
    const dir = mkdtempSync(join(scratch, 'case-'));
    writeFileSync(join(dir, 'remote'), 'payload');
    const got = await host.get(join(dir, 'remote'), join(dir, 'copy'));
    expect(got).toEqual({ path: join(dir, 'copy'), sha256: sha256('payload'), size: 7 });
    expect(readFileSync(join(dir, 'copy'), 'utf8')).toBe('payload');
    expect(await host.sha256(join(dir, 'remote'))).toBe(sha256('payload'));
    expect(await host.stat(join(dir, 'remote'))).toMatchObject({ type: 'file', size: 7 });
    expect(await host.stat(join(dir, 'none'))).toBeUndefined();
  });

  it('collects facts once until something may have changed the host', async () => {
    const local = new LocalHost();
    const recorder = recordCommands(local);
    const factsRuns = (): number => recorder.scripts.filter((script) => script.includes(FACTS_SCRIPT)).length;
    try {
      await local.facts();
      const withPorts = await local.facts({ ports: [1] });
      expect(withPorts.ports).toEqual([{ port: 1, isFree: true }]);
      await local.exec('true', { readOnly: true });
      await local.sha256('/etc/hostname');
      await local.facts();
      expect(factsRuns()).toBe(1);
      await local.exec('true');
      await local.facts();
      expect(factsRuns()).toBe(2);
      await local.put(Buffer.from('x'), join(mkdtempSync(join(scratch, 'case-')), 'f'));
      await local.facts();
      expect(factsRuns()).toBe(3);
    } finally {
      recorder.restore();
    }
  });

  it('collects facts of this machine', async () => {
    const facts = await host.facts({ ports: [1] });
    expect(facts.cpus).toBeGreaterThan(0);
    expect(facts.ports).toEqual([{ port: 1, isFree: true }]);
    expect(facts.clockSkewSeconds).toBe(0);
  });
});
