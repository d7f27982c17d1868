import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, render } from '@testing-library/svelte';
import { tick } from 'svelte';
import Markdown from './Markdown.svelte';

afterEach(() => {
  cleanup();
  vi.useRealTimers();
});

describe('a streaming reply', () => {
  it('renders settled blocks once, and only the growing tail again', async () => {
    const r = render(Markdown, { source: 'First $x^2$.', streaming: true });
    const root = r.container.querySelector('.markdown')!;
    expect(root.textContent).toContain('First');
    await r.rerender({ source: 'First $x^2$.\n\nSecond', streaming: true });
    const blocks = root.querySelectorAll('.block');
    expect(blocks).toHaveLength(2);
    const settled = blocks[0].firstElementChild;
    await r.rerender({ source: 'First $x^2$.\n\nSecond and third', streaming: true });
    // The first block's DOM is the same node: it was not rendered again.
    expect(root.querySelectorAll('.block')[0].firstElementChild).toBe(settled);
    expect(root.querySelectorAll('.block')[1].textContent!.trim()).toBe('Second and third');
    // Done: the whole text rendered as one, at once.
    await r.rerender({ source: 'First $x^2$.\n\nSecond and third.', streaming: false });
    expect(root.querySelectorAll('.block')).toHaveLength(1);
    expect(root.textContent).toContain('Second and third.');
    expect(root.querySelectorAll('.katex')).toHaveLength(1);
  });
});
