/**
 * What the files under a package's `bin/` are, by their first bytes: an ELF
 * executable for some machine, a script, or something else. `package build`
 * refuses an ELF executable for another architecture than the package's
 * (hosts would fail to run it, after the install) and warns about anything
 * that is not an ELF executable (a two-line script named `bin/k3s` is not
 * k3s). Pure: no I/O.
 */
import type { Architecture } from './manifest.js';

/** The ELF `e_machine` values of the architectures packages are built for (and some others, to name them). */
const ELF_MACHINES: Readonly<Record<number, string>> = {
  3: '386',
  8: 'mips',
  20: 'ppc',
  21: 'ppc64',
  40: 'arm',
  62: 'amd64',
  183: 'arm64',
  243: 'riscv64',
};

/** The ELF class (1: 32-bit, 2: 64-bit) and machine of each package architecture. */
const ARCH_ELF: Readonly<Record<Architecture, { elfClass: number; machine: number }>> = {
  amd64: { elfClass: 2, machine: 62 },
  arm64: { elfClass: 2, machine: 183 },
};

/** How many leading bytes {@link executableKindOf} reads. */
export const EXECUTABLE_HEAD_BYTES = 20;

/** What a file's first bytes say it is. */
export type ExecutableKind =
  | { kind: 'elf'; elfClass: number; machine: number; machineName: string }
  | { kind: 'script'; interpreter: string }
  | { kind: 'other' };

/** Reads the kind of a file from its first {@link EXECUTABLE_HEAD_BYTES} bytes (fewer for a short file). */
export function executableKindOf(head: Buffer): ExecutableKind {
  if (head.length >= EXECUTABLE_HEAD_BYTES && head.subarray(0, 4).equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))) {
    const elfClass = head[4]!;
    const isBigEndian = head[5] === 2;
    const machine = isBigEndian ? head.readUInt16BE(18) : head.readUInt16LE(18);
    return { kind: 'elf', elfClass, machine, machineName: ELF_MACHINES[machine] ?? `machine ${machine}` };
  }
  if (head.subarray(0, 2).toString('latin1') === '#!') {
    const line = head.subarray(2).toString('latin1').split('\n')[0]!.trim();
    return { kind: 'script', interpreter: line.split(/\s+/)[0] ?? '' };
  }
  return { kind: 'other' };
}

/** Whether an ELF executable runs on `arch`. */
export function isElfFor(kind: Extract<ExecutableKind, { kind: 'elf' }>, arch: Architecture): boolean {
  const wanted = ARCH_ELF[arch];
  return kind.elfClass === wanted.elfClass && kind.machine === wanted.machine;
}
