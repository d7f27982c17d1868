import { describe, expect, it, vi } from 'vitest';
import katex from 'katex';
import { renderMarkdown, splitBlocks } from './markdown';

function dom(html: string): HTMLElement {
  const div = document.createElement('div');
  div.innerHTML = html;
  return div;
}

describe('renderMarkdown', () => {
  it('renders Markdown', () => {
    const d = dom(renderMarkdown('# Title\n\n**bold** and *it*\n\n- a\n- b\n\n| x | y |\n|---|---|\n| 1 | 2 |'));
    expect(d.querySelector('h1')?.textContent).toBe('Title');
    expect(d.querySelector('strong')?.textContent).toBe('bold');
    expect(d.querySelectorAll('li')).toHaveLength(2);
    expect(d.querySelector('td')?.textContent).toBe('1');
  });

  it('renders inline and display maths with KaTeX in every delimiter R1 uses', () => {
    const d = dom(renderMarkdown('So $x^2 = 4$ and \\(y\\).\n\n$$\\frac{1}{2}$$\n\n\\[\\boxed{42}\\]\n\nInline $$a+b$$ too.'));
    expect(d.querySelectorAll('.katex')).toHaveLength(5);
    expect(d.querySelectorAll('.katex-display')).toHaveLength(3);
    expect(d.querySelector('.katex .msupsub')?.textContent).toContain('2');
    expect(d.querySelector('.katex math')).toBeTruthy();
    expect(d.textContent).toContain('42');
    for (const visible of d.querySelectorAll('.katex-html')) expect(visible.textContent).not.toContain('\\');
  });

  it('renders a formula once however often a growing reply is rendered again', () => {
    const spy = vi.spyOn(katex, 'renderToString');
    const list = (n: number) => Array.from({ length: n }, (_, i) => `- $${i + 1000}^2$`).join('\n');
    const first = renderMarkdown(list(3));
    expect(spy).toHaveBeenCalledTimes(3);
    const again = renderMarkdown(list(4));
    // Only the new item's formula went to KaTeX; the others came out as before.
    expect(spy).toHaveBeenCalledTimes(4);
    expect(dom(again).querySelectorAll('.katex')).toHaveLength(4);
    expect(again.startsWith(first.slice(0, first.lastIndexOf('</li>')))).toBe(true);
    // The same source in display mode is another formula.
    renderMarkdown('$$1000^2$$');
    expect(spy).toHaveBeenCalledTimes(5);
    spy.mockRestore();
  });

  it('lays growing code out line by line, and guesses the language of unlabelled code once done', () => {
    const code = '```\ndef f(x):\n\n    return x * 2\n```';
    const streaming = dom(renderMarkdown(code, { streaming: true }));
    expect(Array.from(streaming.querySelectorAll('code > div'), (d) => d.textContent)).toEqual(['def f(x):\n', '\n', '    return x * 2\n']);
    expect(streaming.querySelector('code span')).toBeNull();
    const done = dom(renderMarkdown(code));
    expect(done.querySelector('code')?.textContent).toBe('def f(x):\n\n    return x * 2');
    expect(done.querySelector('code > div')).toBeNull();
    expect(done.querySelector('code span[class^=hljs-]')).not.toBeNull();
    // Labelled code is highlighted either way.
    expect(dom(renderMarkdown('```python\nreturn 1\n```', { streaming: true })).querySelector('.hljs-keyword')).not.toBeNull();
  });

  it('leaves prices, code and bad TeX alone', () => {
    const d = dom(renderMarkdown('It costs $5 and $10.\n\n`$x$` in code\n\n```python\nprint("$y$")\n```\n\n$\\frac{1}{$'));
    expect(d.querySelector('p')?.textContent).toBe('It costs $5 and $10.');
    expect(d.querySelector('p code')?.textContent).toBe('$x$');
    expect(d.querySelector('pre code')?.textContent).toBe('print("$y$")');
    expect(d.querySelector('pre code.language-python .hljs-built_in')?.textContent).toBe('print');
    expect(d.querySelector('.katex-error')).toBeTruthy();
  });

  it('renders model output inert: no scripts, handlers or javascript: links', () => {
    const html = renderMarkdown(
      'Hi <img src=x onerror="alert(1)"> <script>alert(2)</script> [click](javascript:alert(3)) ' +
        '<a href="javascript:alert(4)">x</a> <iframe src="https://e.com"></iframe> <svg><script>alert(5)</script></svg> ' +
        '<div onclick="alert(6)" style="color:red">d</div>',
    );
    const d = dom(html);
    expect(d.querySelector('script')).toBeNull();
    expect(d.querySelector('iframe')).toBeNull();
    expect(d.querySelector('[onerror]')).toBeNull();
    expect(d.querySelector('[onclick]')).toBeNull();
    for (const a of d.querySelectorAll('a')) expect(a.getAttribute('href') ?? '').not.toMatch(/javascript:/i);
    expect(html).not.toMatch(/alert\([2356]\)/);
    expect(d.querySelector('img')).toBeTruthy();
  });
});

describe('hostile and streaming model output', () => {
  it("strips the model's styles but keeps KaTeX's", () => {
    const d = dom(renderMarkdown('<div style="position:fixed;inset:0">cover</div>\n\nSee <span style="display:none">hidden</span> and $\\frac{a}{b}$'));
    expect(d.querySelector('div[style], span[style]:not(.katex *)')).toBeNull();
    expect(d.textContent).toContain('cover');
    expect(d.querySelector('.katex [style]')).toBeTruthy();
  });

  it('shows text nested too deeply to render as plain text instead of failing', () => {
    const deep = '>'.repeat(20000) + ' quote';
    const d = dom(renderMarkdown(deep));
    expect(d.textContent).toContain('quote');
    const maths = dom(renderMarkdown('$' + '{'.repeat(20000) + 'x' + '}'.repeat(20000) + '$ after'));
    expect(maths.textContent).toContain('after');
  });

  it('splits a reply into blocks at blank lines outside code and display maths', () => {
    const src = 'One\n\n```\na\n\nb\n```\n\n$$\nx\n\ny\n$$\n\n\\[\nz\n\n\\]\n\nLast';
    expect(splitBlocks(src)).toEqual(['One', '```\na\n\nb\n```', '$$\nx\n\ny\n$$', '\\[\nz\n\n\\]', 'Last']);
    expect(splitBlocks('a\n\n\n\nb')).toEqual(['a', 'b']);
  });
});
