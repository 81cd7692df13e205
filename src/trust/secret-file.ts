/**
 * Writing credential files (bootstrap kubeconfigs, keys): readable by the
 * owner only, and atomically, so a reader never sees half a file and a
 * failure leaves no file behind.
 */
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  closeSync,
  constants,
  fsyncSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ValidationError } from '../errors.js';

/** Owner read/write only. */
export const SECRET_FILE_MODE = 0o600;

/**
 * Writes `content` to `path` through a temporary file in the same directory
 * (created 0600, flushed to disk, then renamed over `path`). On any failure
 * the temporary file is removed and `path` is untouched.
 */
export function writeSecretFileAtomic(path: string, content: string): void {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  let fd: number | undefined;
  try {
    fd = openSync(temporary, 'wx', SECRET_FILE_MODE);
    writeSync(fd, content);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temporary, path);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    rmSync(temporary, { force: true });
    throw error;
  }
}

/**
 * Checks, before any long-running work, that `path` can be written: its
 * directory exists and is writable, and `path` is not a directory.
 *
 * @throws {ValidationError} `E_OUTPUT_PATH`.
 */
export function assertSecretFileWritable(path: string): void {
  const directory = dirname(path);
  const invalid = (why: string): ValidationError =>
    new ValidationError(`cannot write ${path}: ${why}`, { code: 'E_OUTPUT_PATH' });
  try {
    if (!statSync(directory).isDirectory()) throw invalid(`${directory} is not a directory`);
    accessSync(directory, constants.W_OK);
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    throw invalid((error as Error).message);
  }
  try {
    if (statSync(path).isDirectory()) throw invalid('it is a directory');
  } catch (error) {
    if (error instanceof ValidationError) throw error;
    // It does not exist yet: fine.
  }
}
