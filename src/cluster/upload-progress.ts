/**
 * Progress of a large upload for people: one line per tenth of the file
 * (`uploading … 30% (60 of 200 MiB)`), so a 200 MiB package is not silent
 * until it is done. Pure: told the transfer's progress, it says lines.
 */
import type { TransferProgress } from '../hosts/host.js';

/** Files smaller than this upload quickly enough to need no progress lines. */
export const UPLOAD_PROGRESS_MIN_BYTES = 16 * 1024 * 1024;

const MiB = 1024 * 1024;

/** A progress sink for `host.put` that says a line each time another `stepPercent` of `what` has gone. */
export function uploadProgressLines(
  what: string,
  totalBytes: number,
  say: (line: string) => void,
  stepPercent = 10,
): ((progress: TransferProgress) => void) | undefined {
  if (totalBytes < UPLOAD_PROGRESS_MIN_BYTES) return undefined;
  let lastStep = 0;
  return (progress) => {
    const done = progress.resumedFrom + progress.bytesTransferred;
    const percent = Math.floor((done / totalBytes) * 100);
    const step = Math.floor(percent / stepPercent);
    if (step <= lastStep || percent >= 100) return;
    lastStep = step;
    const resumed = progress.resumedFrom > 0 ? `, resumed at ${Math.round(progress.resumedFrom / MiB)} MiB` : '';
    say(
      `uploading ${what}: ${step * stepPercent}% (${Math.round(done / MiB)} of ${Math.round(totalBytes / MiB)} MiB${resumed})`,
    );
  };
}

/** `host.put`'s `onProgress` option for `what`: absent for a file too small to need it. */
export function uploadProgress(
  what: string,
  totalBytes: number,
  say: (line: string) => void,
): { onProgress?: (progress: TransferProgress) => void } {
  const onProgress = uploadProgressLines(what, totalBytes, say);
  return onProgress === undefined ? {} : { onProgress };
}
