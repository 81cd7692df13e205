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

  it('numbers lines when the hub acknowledges them, and writes again only the latest unacknowledged line of a rollout', () => {
    const { stream, written } = stalledStream(Infinity);
    const sink = new ReportSink(stream as unknown as ReportStream, { isAcked: true });
    sink.offer(line('web', '1-a'));
    sink.offer(line('db', '1-b'));
    sink.offer(line('web', '2-a'));
    expect(written.map((l) => l.seq)).toEqual([1, 2, 3]);
    expect(sink.unacknowledged).toBe(2);
    sink.ack(2); // db's line, and web's older one
    expect(sink.unacknowledged).toBe(1);
    // A line is written again only once a whole round passed without its acknowledgement.
    sink.resendUnacknowledged();
    expect(written).toHaveLength(3);
    sink.resendUnacknowledged();
    expect(written.slice(3)).toEqual([{ ...line('web', '2-a'), seq: 4 }]);
    sink.ack(4);
    sink.resendUnacknowledged();
    sink.resendUnacknowledged();
    expect(written).toHaveLength(4);
    expect(sink.unacknowledged).toBe(0);
  });

  it('without acknowledgements writes lines as they are, unnumbered, and never again', () => {
    const { stream, written } = stalledStream(Infinity);
    const sink = new ReportSink(stream as unknown as ReportStream);
    sink.offer(line('web', '1-a'));
    sink.resendUnacknowledged();
    sink.resendUnacknowledged();
    expect(written).toEqual([line('web', '1-a')]);
  });
});
