import { describe, expect, it } from 'vitest';
import { lines } from './liveText';

describe('lines', () => {
  it('splits after each line break and joins back to the text', () => {
    expect(lines('')).toEqual(['']);
    expect(lines('one')).toEqual(['one']);
    expect(lines('one\ntwo')).toEqual(['one\n', 'two']);
    expect(lines('one\n\ntwo\n')).toEqual(['one\n', '\n', 'two\n', '']);
    for (const text of ['a\n\n\nb', '\n', 'x\r\ny', 'tail\n\n']) expect(lines(text).join('')).toBe(text);
  });
});
