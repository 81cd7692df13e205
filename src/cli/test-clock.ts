/**
 * The clock of commands that read the time of day (`fleet upgrade`'s
 * maintenance window). For edgeadm's own tests only: with
 * `EDGEADM_TEST_CLOCK_FILE` set, the time is read from that file (an ISO
 * 8601 instant) each time it is asked, so that a test can move the clock
 * during a run, and a window can close under it, without waiting. Not for
 * operators: nothing else in edgeadm reads it.
 */
import { readFileSync } from 'node:fs';
import { ValidationError } from '../errors.js';

/** The variable the test clock file is named in. */
export const TEST_CLOCK_FILE_ENV = 'EDGEADM_TEST_CLOCK_FILE';

/** The clock: the system's, unless the test clock file is set. */
export function commandClock(env: NodeJS.ProcessEnv): () => Date {
  const file = env[TEST_CLOCK_FILE_ENV];
  if (file === undefined || file === '') return () => new Date();
  return () => {
    const text = readFileSync(file, 'utf8').trim();
    const date = new Date(text);
    if (Number.isNaN(date.getTime())) {
      throw new ValidationError(
        `${TEST_CLOCK_FILE_ENV} names ${file}, which holds ${JSON.stringify(text)}, not a time`,
        {
          code: 'E_TEST_CLOCK',
        },
      );
    }
    return date;
  };
}
