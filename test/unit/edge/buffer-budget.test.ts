import { describe, expect, it } from 'vitest';
import { BufferBudget, BufferLease } from '../../../src/edge/buffer-budget.js';

describe('BufferBudget and BufferLease', () => {
  it('refuses a chunk that does not fit, and gives back all of a lease once', () => {
    const budget = new BufferBudget(100);
    const first = new BufferLease(budget);
    const second = new BufferLease(budget);
    expect(first.tryTake(60)).toBe(true);
    expect(second.tryTake(30)).toBe(true);
    expect(second.tryTake(20)).toBe(false);
    expect(budget.used).toBe(90);
    first.release();
    first.release();
    expect(budget.used).toBe(30);
    expect(second.tryTake(70)).toBe(true);
    second.release();
    expect(budget.used).toBe(0);
  });
});
