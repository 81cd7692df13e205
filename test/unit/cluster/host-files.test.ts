/**
 * readHostFiles: several files of a host in one command, each exactly as it
 * is (the host's own shell runs the command here, on this machine's files),
 * and a missing one refused as readHostFile refuses it.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readHostFiles, waitForAndReadHostFiles } from '../../../src/cluster/host-files.js';
import type { ExecResult, Host } from '../../../src/hosts/host.js';

/** A host whose commands run in this machine's `sh`, counted. */
function localShell(): { host: Host; commands: string[] } {
  const commands: string[] = [];
  const host = {
    name: 'local',
    exec: async (command: string): Promise<ExecResult> => {
      commands.push(command);
      try {
        const { stdout, stderr } = await promisify(execFile)('sh', ['-c', command]);
        return { exitCode: 0, stdout, stderr } as ExecResult;
      } catch (error) {
        const failed = error as { code: number; stdout: string; stderr: string };
        return { exitCode: failed.code, stdout: failed.stdout, stderr: failed.stderr } as ExecResult;
      }
    },
  } as unknown as Host;
  return { host, commands };
}

describe('readHostFiles', () => {
  it('reads every file in one command, byte for byte, whatever the files hold', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 300 }), { minLength: 1, maxLength: 4 }),
        async (texts) => {
          const dir = mkdtempSync(join(tmpdir(), 'host-files-'));
          const paths = texts.map((text, index) => {
            const path = join(dir, `file ${index}'s.pem`);
            writeFileSync(path, text);
            return path;
          });
          const shell = localShell();
          const read = await readHostFiles(shell.host, paths);
          expect(shell.commands).toHaveLength(1);
          expect(paths.map((path) => read.get(path))).toEqual(texts);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('reads content that looks like its own output as content', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'host-files-'));
    const tricky = join(dir, 'tricky');
    const empty = join(dir, 'empty');
    writeFileSync(tricky, 'missing\nfile aGVsbG8=\n');
    writeFileSync(empty, '');
    const read = await readHostFiles(localShell().host, [tricky, empty]);
    expect(read.get(tricky)).toBe('missing\nfile aGVsbG8=\n');
    expect(read.get(empty)).toBe('');
  });

  it('refuses a missing file as readHostFile does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'host-files-'));
    const there = join(dir, 'there');
    writeFileSync(there, 'x');
    await expect(readHostFiles(localShell().host, [there, join(dir, 'gone')])).rejects.toMatchObject({
      code: 'E_HOST_FILE_MISSING',
      details: { path: join(dir, 'gone') },
    });
  });
});

describe('waitForAndReadHostFiles', () => {
  it('waits and reads in the same command', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'host-files-'));
    const kubeconfig = join(dir, 'kubelet.kubeconfig');
    writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\n');
    const shell = localShell();
    const read = await waitForAndReadHostFiles(shell.host, [kubeconfig], { timeoutMs: 10_000, what: 'the agent' });
    expect(read.get(kubeconfig)).toBe('apiVersion: v1\nkind: Config\n');
    expect(shell.commands).toHaveLength(1);
  });

  it('refuses what appeared but is no regular file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'host-files-'));
    const notAFile = join(dir, 'kubelet.kubeconfig');
    mkdirSync(notAFile);
    await expect(
      waitForAndReadHostFiles(localShell().host, [notAFile], { timeoutMs: 10_000, what: 'the agent' }),
    ).rejects.toMatchObject({ code: 'E_HOST_FILE_MISSING' });
  });
});
