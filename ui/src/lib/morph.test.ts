import { describe, expect, it } from 'vitest';
import { morph } from './morph';

function shown(html: string): HTMLElement {
  const div = document.createElement('div');
  div.innerHTML = html;
  return div;
}

describe('morph', () => {
  it('keeps what did not change and changes text in place', () => {
    const div = shown('<ol><li>one</li><li>tw</li></ol><p>x</p>');
    const [first, second] = Array.from(div.querySelectorAll('li'));
    const text = second.firstChild;
    morph(div, '<ol><li>one</li><li>two</li><li>three</li></ol>');
    expect(div.innerHTML).toBe('<ol><li>one</li><li>two</li><li>three</li></ol>');
    expect(div.querySelectorAll('li')[0]).toBe(first);
    expect(div.querySelectorAll('li')[1]).toBe(second);
    expect(second.firstChild).toBe(text);
  });

  it('replaces an element whose name or attributes changed', () => {
    const div = shown('<p class="a">x</p><em>y</em><span data-n="1">z</span>');
    const p = div.querySelector('p');
    const span = div.querySelector('span');
    morph(div, '<p class="b">x</p><strong>y</strong><span data-n="1" title="t">z</span>');
    expect(div.innerHTML).toBe('<p class="b">x</p><strong>y</strong><span data-n="1" title="t">z</span>');
    expect(div.querySelector('p')).not.toBe(p);
    expect(div.querySelector('span')).not.toBe(span);
  });

  it('turns any HTML into any other', () => {
    const versions = ['', 'text', '<p>a</p>text<!-- c -->', '<ul><li><b>1</b> and</li></ul>', '<p>a</p>', 'text', ''];
    const div = shown('');
    for (const html of versions) {
      morph(div, html);
      expect(div.innerHTML).toBe(html);
    }
  });
});
