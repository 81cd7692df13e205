import { describe, expect, it } from 'vitest';
import { isColorWanted, styleFor } from '../../../src/cli/style.js';

describe('colour', () => {
  it('is on for a TTY and off for a pipe', () => {
    expect(isColorWanted(true, {})).toBe(true);
    expect(isColorWanted(false, {})).toBe(false);
    expect(isColorWanted(undefined, {})).toBe(false);
  });

  it('is off with NO_COLOR, even on a TTY and even with FORCE_COLOR', () => {
    expect(isColorWanted(true, { NO_COLOR: '1' })).toBe(false);
    expect(isColorWanted(true, { NO_COLOR: '1', FORCE_COLOR: '1' })).toBe(false);
  });

  it('is off on a dumb terminal, and forced on by FORCE_COLOR', () => {
    expect(isColorWanted(true, { TERM: 'dumb' })).toBe(false);
    expect(isColorWanted(false, { FORCE_COLOR: '1' })).toBe(true);
    expect(isColorWanted(false, { FORCE_COLOR: '0' })).toBe(false);
  });

  it('styles with escape codes only when wanted', () => {
    expect(styleFor({ isTTY: true }, {}).red('x')).toBe('\u001b[31mx\u001b[39m');
    expect(styleFor({ isTTY: true }, { NO_COLOR: '1' }).red('x')).toBe('x');
  });
});
