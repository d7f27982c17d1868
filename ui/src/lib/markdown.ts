// Model output to safe HTML: Markdown (marked), maths (KaTeX), code highlighting (highlight.js),
// and DOMPurify last, so whatever the model writes (<script>, onerror=, javascript: links)
// renders inert.
import { Marked, type TokenizerAndRendererExtension } from 'marked';
import katex from 'katex';
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import c from 'highlight.js/lib/languages/c';
import cpp from 'highlight.js/lib/languages/cpp';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import latex from 'highlight.js/lib/languages/latex';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import typescript from 'highlight.js/lib/languages/typescript';

for (const [name, lang] of Object.entries({ bash, c, cpp, java, javascript, json, latex, python, rust, typescript })) {
  hljs.registerLanguage(name, lang);
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// KaTeX's output, set aside while the rest is sanitised: it is the one HTML here that needs
// inline styles, and it is safe by construction (no \href or \includegraphics: trust is off).
let mathOut: string[] = [];

// Formulas rendered lately, by source. A streaming reply's growing block (a long list is one
// block) is rendered again as it grows, and KaTeX was most of that cost; its output depends on
// nothing but the source and the mode.
const texCache = new Map<string, string>();
const TEX_CACHE_SIZE = 2000;

function tex(source: string, displayMode: boolean): string {
  const key = (displayMode ? 'D' : 'I') + source;
  let html = texCache.get(key);
  if (html === undefined) {
    try {
      // throwOnError: false renders a bad formula as red source text instead of failing the reply.
      html = katex.renderToString(source, { displayMode, throwOnError: false, output: 'htmlAndMathml', strict: 'ignore', maxExpand: 1000 });
    } catch {
      // Nesting deep enough to exhaust the stack: the formula's source, as text.
      html = `<code class="math-error">${escapeHtml(source)}</code>`;
    }
    // Oldest first out: a Map iterates in insertion order.
    if (texCache.size >= TEX_CACHE_SIZE) texCache.delete(texCache.keys().next().value!);
    texCache.set(key, html);
  }
  mathOut.push(html);
  return `<span data-math-out="${mathOut.length - 1}"></span>`;
}

// Maths delimiters the R1 models use: $$…$$ and \[…\] for display, $…$ and \(…\) inline.
const blockMath: TokenizerAndRendererExtension = {
  name: 'blockMath',
  level: 'block',
  start: (src) => src.match(/\$\$|\\\[/)?.index,
  tokenizer(src) {
    const m = /^(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])[ \t]*(?:\n|$)/.exec(src);
    if (m) return { type: 'blockMath', raw: m[0], text: (m[1] ?? m[2]).trim() };
  },
  renderer: (token) => `<div class="math-display">${tex(token.text, true)}</div>`,
};

const inlineMath: TokenizerAndRendererExtension = {
  name: 'inlineMath',
  level: 'inline',
  start: (src) => src.match(/\$|\\\(|\\\[/)?.index,
  tokenizer(src) {
    // $$…$$ or \[…\] inside a paragraph is still display maths.
    let m = /^(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])/.exec(src);
    if (m) return { type: 'inlineMath', raw: m[0], text: (m[1] ?? m[2]).trim(), display: true };
    // A single $ opens maths only if followed by non-space and closed before a blank line, and
    // not by a digit after the closing $ (so "$5 and $10" stays text).
    m = /^\$(?!\s)((?:\\.|[^$\\\n]|\n(?!\n))+?)(?<!\s)\$(?!\d)/.exec(src) ?? /^\\\(([\s\S]+?)\\\)/.exec(src);
    if (m) return { type: 'inlineMath', raw: m[0], text: m[1], display: false };
  },
  renderer: (token) => (token.display ? `<span class="math-display">${tex(token.text, true)}</span>` : tex(token.text, false)),
};

const marked = new Marked({
  gfm: true,
  breaks: false,
  extensions: [blockMath, inlineMath],
  renderer: {
    code({ text, lang }) {
      const language = (lang ?? '').trim().split(/\s+/)[0].toLowerCase();
      const known = language !== '' && hljs.getLanguage(language) !== undefined;
      const open = `<pre><code class="hljs${language ? ` language-${language}` : ''}">`;
      if (streaming) {
        // One element per line (see liveText.ts), each highlighted alone: a growing block then
        // changes only its last line's element, and the window repaints that line. Once done,
        // the whole block is highlighted as one, where a string or comment can span lines.
        const line = (l: string) => `<div>${known ? hljs.highlight(l, { language }).value : escapeHtml(l)}\n</div>`;
        return `${open}${text.split('\n').map(line).join('')}</code></pre>`;
      }
      const html = known ? hljs.highlight(text, { language }).value : hljs.highlightAuto(text).value;
      return `${open}${html}</code></pre>`;
    },
  },
});

// Whether the text is still growing (see renderMarkdown).
let streaming = false;

// Links open nowhere inside the app window; keep them visibly links but make them inert for
// navigation (the click handler in Markdown.svelte stops them).
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('rel', 'noopener noreferrer');
    node.setAttribute('target', '_blank');
  }
});

/** Model output as safe HTML; text that cannot be rendered (nesting deep enough to exhaust the
 * stack) shows as plain text instead of failing the message. A `streaming` text is still
 * growing, and rendered again ten times a second: its code is laid out line by line, and code
 * without a language is shown plain until it is done (guessing the language tries every one on
 * the whole text). */
export function renderMarkdown(source: string, { streaming: growing = false } = {}): string {
  mathOut = [];
  streaming = growing;
  try {
    const html = marked.parse(source, { async: false });
    // The model's own HTML loses its styles (it could hide text or cover the window).
    const safe = DOMPurify.sanitize(html, {
      USE_PROFILES: { html: true, mathMl: true, svg: true },
      FORBID_TAGS: ['style', 'form', 'input', 'button', 'iframe'],
      FORBID_ATTR: ['style'],
    });
    const math = mathOut;
    return safe.replace(/<span data-math-out="(\d+)"><\/span>/g, (_, i) => math[Number(i)] ?? '');
  } catch {
    return `<p class="plain">${escapeHtml(source)}</p>`;
  } finally {
    mathOut = [];
  }
}

/** Splits Markdown at blank lines that end a block (not inside a code fence or a display-maths
 * block), so a streaming reply re-renders only its growing last block. Only blank lines are
 * dropped: the blocks in order hold all the source's text. */
export function splitBlocks(source: string): string[] {
  const blocks: string[] = [];
  let current: string[] = [];
  let fence: string | null = null;
  let inMath = false;
  for (const line of source.split('\n')) {
    const t = line.trim();
    if (fence === null && !inMath && t === '') {
      if (current.length) blocks.push(current.join('\n'));
      current = [];
      continue;
    }
    current.push(line);
    const f = /^(`{3,}|~{3,})/.exec(t);
    if (f && !inMath) {
      if (fence === null) fence = f[1][0];
      else if (t.startsWith(fence.repeat(3))) fence = null;
    } else if (fence === null) {
      // An odd number of $$ (or a lone \[ / \]) on a line opens or closes display maths.
      const dollars = (t.match(/\$\$/g) ?? []).length;
      const opens = (t.match(/\\\[/g) ?? []).length;
      const closes = (t.match(/\\\]/g) ?? []).length;
      if (dollars % 2 === 1 || opens !== closes) inMath = !inMath;
    }
  }
  if (current.length) blocks.push(current.join('\n'));
  return blocks;
}
