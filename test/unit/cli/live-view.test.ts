import { describe, expect, it } from 'vitest';
import { LiveView } from '../../../src/cli/live-view.js';

function stream(isTTY: boolean): { isTTY: boolean; text: string; write(text: string): void } {
  return {
    isTTY,
    text: '',
    write(text: string) {
      this.text += text;
    },
  };
}

describe('a live view', () => {
  it('on a terminal, draws each rendering over the previous one', () => {
    const out = stream(true);
    const view = new LiveView(out);
    view.show('a\nb\nc', 'line 1');
    view.show('d\ne', 'line 2');
    view.show('f', 'line 3');
    // Back three lines (a, b, c) and clear, then back two (d, e) and clear.
    expect(out.text).toBe('a\nb\nc\n\x1b[3F\x1b[Jd\ne\n\x1b[2F\x1b[Jf\n');
  });

  it('elsewhere, writes one timestamped line per change and no escape codes', () => {
    const out = stream(false);
    const view = new LiveView(out, () => new Date(Date.UTC(2026, 0, 2, 3, 4, 5)));
    view.show('a\nb', 'web  revision 1  progressing');
    view.show('c', 'web  revision 1  complete');
    expect(out.text).toBe(
      '2026-01-02T03:04:05.000Z web  revision 1  progressing\n2026-01-02T03:04:05.000Z web  revision 1  complete\n',
    );
  });
});
