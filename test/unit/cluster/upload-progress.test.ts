import { describe, expect, it } from 'vitest';
import { uploadProgress, uploadProgressLines } from '../../../src/cluster/upload-progress.js';

const MiB = 1024 * 1024;

describe('upload progress lines (newcomer point 16)', () => {
  it('says one line per tenth of a large package, counting a resumed start', () => {
    const lines: string[] = [];
    const onProgress = uploadProgressLines('edge-k3s', 200 * MiB, (line) => lines.push(line))!;
    for (let sent = MiB; sent <= 200 * MiB; sent += MiB) {
      onProgress({ bytesTransferred: sent, resumedFrom: 0, totalBytes: 200 * MiB });
    }
    expect(lines).toHaveLength(9);
    expect(lines[0]).toBe('uploading edge-k3s: 10% (20 of 200 MiB)');
    expect(lines.at(-1)).toBe('uploading edge-k3s: 90% (180 of 200 MiB)');

    const resumed: string[] = [];
    const again = uploadProgressLines('edge-k3s', 200 * MiB, (line) => resumed.push(line))!;
    again({ bytesTransferred: 10 * MiB, resumedFrom: 100 * MiB, totalBytes: 200 * MiB });
    expect(resumed).toEqual(['uploading edge-k3s: 50% (110 of 200 MiB, resumed at 100 MiB)']);
  });

  it('stays quiet for a small file', () => {
    expect(uploadProgressLines('small', MiB, () => undefined)).toBeUndefined();
  });

  it('gives host.put an onProgress for a large file only (the 116 MiB edgeadm a join uploads to an edge node)', () => {
    expect(uploadProgress('small', MiB, () => undefined)).toEqual({});
    const lines: string[] = [];
    const { onProgress } = uploadProgress('edgeadm', 116 * MiB, (line) => lines.push(line));
    onProgress!({ bytesTransferred: 60 * MiB, resumedFrom: 0, totalBytes: 116 * MiB });
    expect(lines).toEqual(['uploading edgeadm: 50% (60 of 116 MiB)']);
  });
});
