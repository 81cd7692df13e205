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
import { afterAll, describe, expect, it } from 'vitest';
import { HostCommandError, execOrThrow } from '../../../src/hosts/host.js';
import { LocalHost } from '../../../src/hosts/local-host.js';

/** Every directory this file makes lives here, and goes when the file is done. */
const scratch = mkdtempSync(join(tmpdir(), 'eadm-local-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');
const host = new LocalHost();

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
    const started = Date.now();
    const result = await host.exec(`${marker} & wait`, { timeoutMs: 200 });
    expect(result).toMatchObject({ timedOut: true, exitCode: null });
    expect(Date.now() - started).toBeLessThan(10_000);
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

  it('runs sudo commands directly when already root', async () => {
    if (process.getuid?.() !== 0) return;
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

  it('collects facts of this machine', async () => {
    const facts = await host.facts({ ports: [1] });
    expect(facts.cpus).toBeGreaterThan(0);
    expect(facts.ports).toEqual([{ port: 1, isFree: true }]);
    expect(facts.clockSkewSeconds).toBe(0);
  });
});
