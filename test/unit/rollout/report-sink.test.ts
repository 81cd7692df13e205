/**
 * The report stream's backlog (src/rollout/report-sink.ts): a hub that does
 * not read holds back one line per rollout, the latest, never a queue.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ReportSink, type ReportStream } from '../../../src/rollout/report-sink.js';
import type { ReportMessage } from '../../../src/rollout/wire.js';

describe('ReportSink', () => {
  /** A report stream whose buffer is full after `room` writes, until `drain`. */
  function stalledStream(room: number) {
    const events = new EventEmitter();
    const written: ReportMessage[] = [];
    const stream = {
      destroyed: false,
      closed: false,
      writable: true,
      write: (line: string) => {
        written.push(JSON.parse(line) as ReportMessage);
        return written.length < room;
      },
      end: () => undefined,
      once: (event: string, listener: () => void) => events.once(event, listener),
      drain: () => {
        room = Infinity;
        events.emit('drain');
      },
    };
    return { stream, written };
  }
  const line = (rollout: string, revision: string): ReportMessage => ({
    kind: 'copy',
    rollout,
    cluster: 'c1',
    revision,
    readiness: 'progressing',
    objects: [],
  });

  it('holds back one line per rollout while the reader does not read, the latest, and writes them on drain', () => {
    const { stream, written } = stalledStream(1);
    const sink = new ReportSink(stream as unknown as ReportStream);
    for (let n = 0; n < 1000; n += 1) {
      sink.offer(line('web', `${n}-a`));
      sink.offer(line('db', `${n}-b`));
    }
    expect(written).toHaveLength(1);
    expect(sink.waiting).toBe(2);
    stream.drain();
    expect(written.map((l) => [l.rollout, (l as { revision: string }).revision])).toEqual([
      ['web', '0-a'],
      ['web', '999-a'],
      ['db', '999-b'],
    ]);
    expect(sink.waiting).toBe(0);
  });
});
