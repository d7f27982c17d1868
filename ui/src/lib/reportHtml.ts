// A validation report as one self-contained HTML file, for a colleague without Ponder: what
// Rust chose to show (`JobReport`: the problems in report order, one sample for each that needs
// a look) rendered with the chat's own Markdown and KaTeX. The maths is rendered here, so the
// file runs no script; KaTeX's stylesheet and fonts are inside it, and its Content-Security-
// Policy forbids fetching anything, so it opens the same offline. *Print* prints this document.
import katexCss from 'katex/dist/katex.min.css?raw';
import type { JobReport, ProblemStatus, ShownSample } from './api';
import { renderMarkdown } from './markdown';
import { language, t, type MessageKey } from './i18n.svelte';

// KaTeX's fonts as data URLs (only the WOFF2 files: every browser that renders KaTeX reads them).
const fonts = import.meta.glob('/node_modules/katex/dist/fonts/*.woff2', { query: '?inline', import: 'default', eager: true }) as Record<string, string>;

/** KaTeX's stylesheet with each font inlined and the WOFF and TTF fallbacks dropped. */
export function inlineKatexCss(): string {
  return katexCss.replace(/src:url\(fonts\/([\w-]+)\.woff2\) format\("woff2"\)[^;}]*/g, (whole, name: string) => {
    const data = Object.entries(fonts).find(([path]) => path.endsWith(`/${name}.woff2`))?.[1];
    return data ? `src:url(${data}) format("woff2")` : whole;
  });
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const percent = (x: number) => `${Math.round(x * 100)}%`;
const verdictOf = (p: ProblemStatus) => (p.verdict ? t(`jobs.verdict.${p.verdict}` as MessageKey) : t('jobs.state.running'));

const REPORT_CSS = `
  body { font: 15px/1.5 system-ui, sans-serif; color: #1d2433; margin: 0; background: #fff; }
  main { max-width: 60rem; margin: 0 auto; padding: 2rem 1.5rem; }
  h1 { margin: 0 0 0.3rem; font-size: 1.6rem; }
  .meta { color: #5b6478; margin: 0 0 1rem; }
  table { border-collapse: collapse; width: 100%; margin: 0.5rem 0 1.5rem; }
  th, td { border-bottom: 1px solid #dde1ea; padding: 0.35rem 0.5rem; text-align: left; vertical-align: top; }
  th { font-weight: 600; color: #5b6478; }
  .counts { width: auto; }
  .counts td:last-child { text-align: right; font-variant-numeric: tabular-nums; }
  .problem { border: 1px solid #dde1ea; border-left: 4px solid #c2410c; border-radius: 6px; padding: 0.8rem 1rem; margin: 0 0 1rem; break-inside: avoid; }
  .problem.unsure { border-left-color: #a16207; }
  .problem h3 { margin: 0 0 0.5rem; font-size: 1.05rem; }
  .problem dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.25rem 1rem; margin: 0 0 0.6rem; }
  .problem dt { color: #5b6478; }
  .problem dd { margin: 0; }
  .problem dd > :first-child, .answer > :first-child, td > :first-child { margin-top: 0; }
  .problem dd > :last-child, .answer > :last-child, td > :last-child { margin-bottom: 0; }
  h4 { margin: 0.2rem 0 0.4rem; }
  .answer { border-top: 1px dashed #dde1ea; padding-top: 0.5rem; }
  details { margin-top: 0.5rem; color: #5b6478; }
  summary { cursor: pointer; }
  pre { white-space: pre-wrap; overflow-wrap: anywhere; }
  .badge { font-size: 0.85em; padding: 0.05rem 0.45rem; border-radius: 999px; background: #eef1f6; }
  @media print { main { padding: 0; } details { display: none; } }
`;

function problemCard(p: ProblemStatus, sample: ShownSample | undefined): string {
  const reason = p.reason ? ` <span class="badge">${escapeHtml(t(`jobs.reason.${p.reason}` as MessageKey))}</span>` : '';
  const answer = sample
    ? `<section class="answer"><h4>${escapeHtml(t('report.sampleAnswer', { n: sample.sample_idx + 1 }))}</h4>${renderMarkdown(sample.answer)}` +
      (sample.thinking.trim() ? `<details><summary>${escapeHtml(t('report.thinking'))}</summary>${renderMarkdown(sample.thinking)}</details>` : '') +
      '</section>'
    : '';
  return `<article class="problem ${p.verdict ?? ''}" data-problem="${escapeHtml(p.id)}">
<h3>${escapeHtml(p.id)} · ${escapeHtml(verdictOf(p))}${reason}</h3>
<dl>
<dt>${escapeHtml(t('report.question'))}</dt><dd>${renderMarkdown(p.question)}</dd>
<dt>${escapeHtml(t('report.key'))}</dt><dd>${renderMarkdown(p.key ?? '')}</dd>
<dt>${escapeHtml(t('report.majority'))}</dt><dd>${renderMarkdown(p.majority ?? '∅')}</dd>
<dt>${escapeHtml(t('report.agreement'))}</dt><dd>${escapeHtml(t('report.agreementOf', { percent: percent(p.agreement), samples: p.samples_done }))}</dd>
</dl>${answer}</article>`;
}

/** The whole report as an HTML document. */
export function reportHtml(report: JobReport, generatedAt = new Date()): string {
  const { table } = report;
  const ordered = table.report_order.map((i) => table.problems[i]);
  const look = ordered.filter((p) => p.verdict === 'disputed' || p.verdict === 'unsure');
  const rest = ordered.filter((p) => !look.includes(p));
  const c = table.counts;
  const counts = ([['confirmed', c.confirmed], ['disputed', c.disputed], ['unsure', c.unsure], ['answered', c.answered]] as const)
    .filter(([, n]) => n > 0)
    .map(([v, n]) => `<tr data-verdict="${v}"><td>${escapeHtml(t(`jobs.verdict.${v}`))}</td><td>${n}</td></tr>`).join('');
  const settled = rest.map((p) => `<tr><td>${escapeHtml(p.id)}</td><td>${escapeHtml(verdictOf(p))}</td><td>${renderMarkdown(p.key ?? '')}</td>` +
    `<td>${renderMarkdown(p.majority ?? '∅')}</td><td>${percent(p.agreement)}</td><td>${renderMarkdown(p.question)}</td></tr>`).join('\n');
  const shownFor = (p: ProblemStatus) => report.shown.find((s) => s.problem_idx === p.idx);
  const date = generatedAt.toLocaleString(language(), { dateStyle: 'long', timeStyle: 'short' });
  return `<!doctype html>
<html lang="${language()}">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; font-src data:; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="Ponder">
<title>${escapeHtml(report.title)}</title>
<style>${inlineKatexCss()}</style>
<style>${REPORT_CSS}</style>
</head>
<body>
<main>
<h1>${escapeHtml(report.title)}</h1>
<p class="meta">${escapeHtml(t('report.meta', { problems: table.problems.length, samples: table.options.samples, date }))}</p>
<table class="counts" data-testid="report-counts"><tbody>${counts}</tbody></table>
${look.length ? `<h2>${escapeHtml(t('report.needsLook', { count: look.length }))}</h2>\n${look.map((p) => problemCard(p, shownFor(p))).join('\n')}` : ''}
${rest.length ? `<h2>${escapeHtml(t('report.settled', { count: rest.length }))}</h2>
<table class="settled"><thead><tr><th>${escapeHtml(t('report.id'))}</th><th>${escapeHtml(t('report.verdict'))}</th><th>${escapeHtml(t('report.key'))}</th><th>${escapeHtml(t('report.majority'))}</th><th>${escapeHtml(t('report.agreement'))}</th><th>${escapeHtml(t('report.question'))}</th></tr></thead>
<tbody>${settled}</tbody></table>` : ''}
</main>
</body>
</html>
`;
}
