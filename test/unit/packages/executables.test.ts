/**
 * `package build` checks what it packs under bin/: an ELF executable for
 * another architecture is refused, anything that is not an ELF executable (a
 * two-line script named bin/k3s) is packed with a warning.
 */
import { copyFile, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildPackage } from '../../../src/packages/build.js';
import { executableKindOf, isElfFor } from '../../../src/packages/executables.js';
import { isEdgeadmError } from '../../../src/errors.js';

/** An ELF header's first 20 bytes: class, byte order and machine. */
function elfHead(elfClass: number, machine: number, bigEndian = false): Buffer {
  const head = Buffer.alloc(20);
  head.set([0x7f, 0x45, 0x4c, 0x46, elfClass, bigEndian ? 2 : 1, 1]);
  if (bigEndian) head.writeUInt16BE(machine, 18);
  else head.writeUInt16LE(machine, 18);
  return head;
}

describe('executableKindOf', () => {
  it('reads the class and machine of ELF headers in either byte order', () => {
    expect(executableKindOf(elfHead(2, 62))).toMatchObject({ kind: 'elf', machineName: 'amd64' });
    expect(executableKindOf(elfHead(2, 183))).toMatchObject({ kind: 'elf', machineName: 'arm64' });
    expect(executableKindOf(elfHead(1, 40))).toMatchObject({ kind: 'elf', elfClass: 1, machineName: 'arm' });
    expect(executableKindOf(elfHead(2, 21, true))).toMatchObject({ kind: 'elf', machineName: 'ppc64' });
    expect(executableKindOf(elfHead(2, 9999))).toMatchObject({ kind: 'elf', machineName: 'machine 9999' });
  });

  it('matches an ELF executable to the package architectures', () => {
    const amd64 = executableKindOf(elfHead(2, 62));
    const arm64 = executableKindOf(elfHead(2, 183));
    const x86 = executableKindOf(elfHead(1, 62));
    if (amd64.kind !== 'elf' || arm64.kind !== 'elf' || x86.kind !== 'elf') throw new Error('not read as ELF');
    expect([isElfFor(amd64, 'amd64'), isElfFor(amd64, 'arm64')]).toEqual([true, false]);
    expect([isElfFor(arm64, 'arm64'), isElfFor(arm64, 'amd64')]).toEqual([true, false]);
    expect(isElfFor(x86, 'amd64')).toBe(false);
  });

  it('names a script by its interpreter, and anything else as other', () => {
    expect(executableKindOf(Buffer.from('#!/bin/sh\necho k3s\n'))).toEqual({ kind: 'script', interpreter: '/bin/sh' });
    expect(executableKindOf(Buffer.from('#! /usr/bin/env bash\n'))).toEqual({
      kind: 'script',
      interpreter: '/usr/bin/env',
    });
    expect(executableKindOf(Buffer.from('MZ\x90\x00'))).toEqual({ kind: 'other' });
    expect(executableKindOf(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))).toEqual({ kind: 'other' });
  });
});

describe('package build and what is under bin/', () => {
  /** A k3s source directory whose bin/k3s is `content`, or a copy of this machine's `/bin/true` (amd64 ELF). */
  async function source(content: Buffer | 'this machine'): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'edgeadm-executables-'));
    await mkdir(join(dir, 'bin'));
    if (content === 'this machine') await copyFile('/bin/true', join(dir, 'bin', 'k3s'));
    else await writeFile(join(dir, 'bin', 'k3s'), content, { mode: 0o755 });
    return dir;
  }
  const build = async (from: string, arch: 'amd64' | 'arm64') =>
    buildPackage({
      from,
      distribution: 'k3s',
      kubernetesVersion: 'v1.31.4+k3s1',
      arch,
      output: join(from, '..', `${arch}-${Date.now()}.tar.gz`),
    });
  const machineArch = process.arch === 'arm64' ? 'arm64' : 'amd64';
  const otherArch = machineArch === 'amd64' ? 'arm64' : 'amd64';

  it('packs an ELF executable for the package architecture without a word', async () => {
    expect((await readFile('/bin/true')).subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    const built = await build(await source('this machine'), machineArch);
    expect(built.warnings).toEqual([]);
  });

  it('refuses an ELF executable for another architecture, naming both', async () => {
    const refused = await build(await source('this machine'), otherArch).catch((error: unknown) => error);
    expect(isEdgeadmError(refused) ? refused.code : refused).toBe('E_PACKAGE_ARCH');
    expect(String((refused as Error).message)).toContain(
      `"bin/k3s" is an ELF executable for ${machineArch}, not for ${otherArch}`,
    );
  });

  it('packs a two-line script named bin/k3s with a warning that it is not an ELF executable', async () => {
    const built = await build(await source(Buffer.from('#!/bin/sh\necho k3s\n')), 'amd64');
    expect(built.warnings).toEqual([
      'bin/k3s is not an ELF executable for amd64 (it is a script for /bin/sh): hosts will run it as it is; check that it is the program you meant to package',
    ]);
  });
});
