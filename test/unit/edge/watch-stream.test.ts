import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseApiPath, type ApiPath } from '../../../src/kube/api-path.js';
import {
  WatchLineSplitter,
  initialVersionOf,
  parseWatchEvent,
  resumeTarget,
  versionAfter,
  watchTimeoutMs,
} from '../../../src/edge/watch-stream.js';

function target(text: string): ApiPath {
  const checked = parseApiPath(text);
  if (!checked.ok) throw new Error(checked.message);
  return checked.value;
}

describe('WatchLineSplitter', () => {
  it('yields the same non-empty lines however the stream is cut into chunks', () => {
    const line = fc.string({ unit: fc.constantFrom('a', '{', '}', ' ', 'é') });
    fc.assert(
      fc.property(fc.array(line, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 6 }), (lines, cuts) => {
        const stream = lines.map((l) => `${l}\n`).join('');
        const points = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
        const chunks: string[] = [];
        let from = 0;
        for (const point of [...points, stream.length]) {
          chunks.push(stream.slice(from, point));
          from = point;
        }
        const splitter = new WatchLineSplitter(1024);
        const seen = chunks.flatMap((chunk) => splitter.push(chunk).lines);
        expect(seen).toEqual(lines.map((l) => l.trim()).filter((l) => l !== ''));
      }),
    );
  });

  it('overflows when an unfinished line passes its bound, not when whole lines do', () => {
    const splitter = new WatchLineSplitter(8);
    expect(splitter.push('0123456789\n')).toEqual({ lines: ['0123456789'], isOverflow: false });
    expect(splitter.push('01234567')).toEqual({ lines: [], isOverflow: false });
    expect(splitter.push('8')).toEqual({ lines: [], isOverflow: true });
  });
});

describe('watch positions', () => {
  it('moves on with every event but ERROR, and starts from no position for 0 or none', () => {
    expect(versionAfter({ type: 'MODIFIED', object: { metadata: { resourceVersion: '42' } } })).toBe('42');
    expect(versionAfter({ type: 'ERROR', object: { metadata: { resourceVersion: '42' } } })).toBeUndefined();
    expect(versionAfter({ type: 'ADDED', object: {} })).toBeUndefined();
    expect(parseWatchEvent('not json')).toBeUndefined();
    expect(parseWatchEvent('{"type":"ADDED"}')).toEqual({ type: 'ADDED' });
    expect(initialVersionOf('watch=1&resourceVersion=0')).toBeUndefined();
    expect(initialVersionOf('watch=1')).toBeUndefined();
    expect(initialVersionOf('watch=1&resourceVersion=17')).toBe('17');
  });

  it('resumes with the client target byte for byte, only its resourceVersion moved on', () => {
    const asked = target(
      '/api/v1/namespaces/a%20b/pods?watch=1&labelSelector=app%3Dx&resourceVersion=5&sendInitialEvents=true&resourceVersionMatch=NotOlderThan',
    );
    expect(resumeTarget(asked, undefined)).toBe(asked.target);
    expect(resumeTarget(asked, '9')).toBe(
      '/api/v1/namespaces/a%20b/pods?watch=1&labelSelector=app%3Dx&resourceVersion=9',
    );
    expect(resumeTarget(target('/api/v1/pods'), 'a&b')).toBe('/api/v1/pods?resourceVersion=a%26b');
  });

  it('ends a watch after the timeoutSeconds the client asked for, and only then', () => {
    expect(watchTimeoutMs('watch=1&timeoutSeconds=30')).toBe(30_000);
    expect(watchTimeoutMs('watch=1&timeoutSeconds=0')).toBeUndefined();
    expect(watchTimeoutMs('watch=1&timeoutSeconds=x')).toBeUndefined();
    expect(watchTimeoutMs('watch=1')).toBeUndefined();
  });
});
