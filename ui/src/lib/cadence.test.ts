import { afterEach, describe, expect, it, vi } from 'vitest';
import { cadenced, STREAM_UPDATE_MS } from './cadence';

afterEach(() => vi.useRealTimers());

type E = { delta: boolean; n: number };

describe('cadenced', () => {
  it('applies deltas together at most every STREAM_UPDATE_MS, and anything else at once and in order', async () => {
    vi.useFakeTimers();
    const applied: [number, number][] = [];
    const deliver = cadenced((e: E, at: number) => applied.push([e.n, at]), (e) => e.delta);
    const t0 = Date.now();
    deliver({ delta: false, n: 0 });
    expect(applied.map(([n]) => n)).toEqual([0]);
    deliver({ delta: true, n: 1 });
    await vi.advanceTimersByTimeAsync(40);
    deliver({ delta: true, n: 2 });
    expect(applied.map(([n]) => n)).toEqual([0]);
    await vi.advanceTimersByTimeAsync(STREAM_UPDATE_MS);
    expect(applied.map(([n]) => n)).toEqual([0, 1, 2]);
    // Each with the time it arrived, not the time it was applied.
    expect(applied[2][1] - t0).toBe(40);
    deliver({ delta: true, n: 3 });
    deliver({ delta: false, n: 4 });
    expect(applied.map(([n]) => n)).toEqual([0, 1, 2, 3, 4]);
    await vi.advanceTimersByTimeAsync(STREAM_UPDATE_MS * 2);
    expect(applied).toHaveLength(5);
  });
});
