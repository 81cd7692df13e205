import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertSecretFileWritable, writeSecretFileAtomic } from '../../../src/trust/secret-file.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'edgeadm-secret-file-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('writeSecretFileAtomic', () => {
  it('writes the content with mode 0600 and leaves no temporary file', () => {
    const path = join(dir, 'bootstrap.conf');
    writeSecretFileAtomic(path, 'token: x\n');
    expect(readFileSync(path, 'utf8')).toBe('token: x\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['bootstrap.conf']);
  });

  it('closes the file it wrote: no descriptor of this process stays open on it', () => {
    const path = join(dir, 'closed.conf');
    writeSecretFileAtomic(path, 'token: x\n');
    // Linux names each open descriptor's file under /proc/self/fd (the file's new name after the rename).
    const openFiles = readdirSync('/proc/self/fd').map((fd) => {
      try {
        return readlinkSync(join('/proc/self/fd', fd));
      } catch {
        return ''; // the descriptor of the directory listing itself, closed by now
      }
    });
    expect(openFiles.filter((file) => file.startsWith(dir))).toEqual([]);
  });

  it('replaces an existing file whole, and makes it 0600 even if it was not', () => {
    const path = join(dir, 'replace.conf');
    writeFileSync(path, 'old content that is longer', { mode: 0o644 });
    writeSecretFileAtomic(path, 'new');
    expect(readFileSync(path, 'utf8')).toBe('new');
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('leaves nothing behind when the target cannot be written', () => {
    const sub = join(dir, 'target-is-a-dir');
    mkdirSync(join(sub, 'out.conf'), { recursive: true });
    expect(() => writeSecretFileAtomic(join(sub, 'out.conf'), 'x')).toThrow();
    expect(readdirSync(sub)).toEqual(['out.conf']);
  });
});

describe('assertSecretFileWritable', () => {
  it('accepts a new file in an existing directory', () => {
    expect(() => assertSecretFileWritable(join(dir, 'new.conf'))).not.toThrow();
  });

  it('refuses a missing directory and a path that is a directory', () => {
    expect(() => assertSecretFileWritable(join(dir, 'missing', 'x.conf'))).toThrow(
      expect.objectContaining({ code: 'E_OUTPUT_PATH', exitCode: 3 }),
    );
    expect(() => assertSecretFileWritable(dir)).toThrow(
      expect.objectContaining({ code: 'E_OUTPUT_PATH', message: `cannot write ${dir}: it is a directory` }),
    );
  });
});

describe('secret files when the file system says no', () => {
  it('reports why the temporary file could not be made, not a failed clean-up', () => {
    expect(() => writeSecretFileAtomic(join(dir, 'missing-dir', 'x.conf'), 'x')).toThrow(/^ENOENT: [^,]*, open /);
  });

  it('removes its temporary file when the rename fails', () => {
    const parent = mkdtempSync(join(dir, 'rename-'));
    const target = join(parent, 'taken');
    mkdirSync(join(target, 'child'), { recursive: true });
    expect(() => writeSecretFileAtomic(target, 'x')).toThrow();
    expect(readdirSync(parent)).toEqual(['taken']);
  });

  it('refuses an output whose directory is a file, saying so once', () => {
    const file = join(dir, 'plain-file');
    writeFileSync(file, 'x');
    const path = join(file, 'out.conf');
    expect(() => assertSecretFileWritable(path)).toThrow(
      expect.objectContaining({ code: 'E_OUTPUT_PATH', message: `cannot write ${path}: ${file} is not a directory` }),
    );
  });
});
