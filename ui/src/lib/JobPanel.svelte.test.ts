import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/svelte';
import JobPanel from './JobPanel.svelte';
import { JobsController, rowState } from './jobs.svelte';
import type { JobTable, ProblemStatus } from './api';
import { setLanguage } from './i18n.svelte';

afterEach(() => {
  cleanup();
  setLanguage('en');
});

const problem = (idx: number, verdict: ProblemStatus['verdict'], done = 2): ProblemStatus => ({
  idx, id: String(idx + 1), question: `Question ${idx + 1}`, key: String(idx), line: idx + 2, samples_done: done, samples_total: 2,
  answers: Array(done).fill(String(idx)), majority: verdict ? String(idx) : null, agreement: done ? 1 : 0, verdict,
  reason: null, check: null, cut_off: 0,
});

function table(state: JobTable['summary']['state'], problems: ProblemStatus[], report_order = problems.map((p) => p.idx)): JobTable {
  const count = (v: string) => problems.filter((p) => p.verdict === v).length;
  return {
    summary: { id: 3, name: 'set.csv', source: '/s/set.csv', state, created_at: 0, problems: problems.length,
      samples_total: problems.length * 2, samples_done: problems.reduce((n, p) => n + p.samples_done, 0), has_key: true },
    options: { samples: 2, max_tokens: 100, thinking_budget: null, temperature: 0.6, top_p: 0.95, seed: null, math_instruction: true, max_samples: null, thinking: null },
    problems,
    counts: { confirmed: count('confirmed'), disputed: count('disputed'), unsure: count('unsure'), answered: 0,
      pending: problems.filter((p) => !p.verdict).length, samples_done: problems.reduce((n, p) => n + p.samples_done, 0),
      cut_off: problems.reduce((n, p) => n + p.cut_off, 0), many_cut_off: false },
    report_order,
    export_names: { csv: 'set.results.csv', jsonl: 'set.results.jsonl', markdown: 'set.report.md', html: 'set.report.html' },
  };
}

describe('job table', () => {
  it('names each problem state: queued, thinking, then its verdict', () => {
    expect(rowState(problem(0, null, 0), false)).toBe('queued');
    expect(rowState(problem(0, null, 1), true)).toBe('thinking');
    for (const v of ['confirmed', 'disputed', 'unsure', 'answered'] as const) expect(rowState(problem(0, v), false)).toBe(v);
  });

  it('shows a running job live, in file order, with its pause button', () => {
    const c = new JobsController();
    c.selectedId = 3;
    c.table = table('running', [problem(0, 'confirmed'), problem(1, null, 1), problem(2, null, 0)]);
    c.running[3] = true;
    c.live['3:1:1'] = { thinking: 'hmm', answer: '' };
    c.progress[3] = { done: 3, total: 6, tokens_per_second: 12.25, eta_seconds: 30 };
    render(JobPanel, { controller: c });
    const states = screen.getAllByTestId('job-row').map((r) => r.dataset.state);
    expect(states).toEqual(['confirmed', 'thinking', 'queued']);
    expect(screen.getAllByTestId('job-row').map((r) => r.querySelector('.badge')!.textContent)).toEqual(['confirmed', 'thinking', 'queued']);
    expect(screen.getByTestId('job-progress-text').textContent!.trim()).toBe('3 of 6 samples · 12.3 tok/s · 30 s left');
    expect(screen.getByTestId('job-state').textContent).toBe('Running');
    expect(screen.getByTestId('pause')).toBeTruthy();
    expect(screen.queryByTestId('resume')).toBeNull();
  });

  it('reports a finished keyed job with counts, filters, and in Chinese', async () => {
    setLanguage('zh-CN');
    const c = new JobsController();
    c.selectedId = 3;
    // The report's order comes from Rust (ponder_jobs::report::report_order).
    c.table = table('done', [problem(0, 'confirmed'), problem(1, 'disputed'), problem(2, 'unsure'), problem(3, 'confirmed')], [1, 2, 0, 3]);
    render(JobPanel, { controller: c });
    expect(screen.getAllByTestId('job-row').map((r) => r.dataset.state)).toEqual(['disputed', 'unsure', 'confirmed', 'confirmed']);
    expect(screen.getByTestId('count-confirmed').textContent).toMatch(/答案确认\s*2/);
    expect(screen.getByTestId('job-state').textContent).toBe('已完成');
    expect(screen.queryByTestId('pause')).toBeNull();
    await fireEvent.click(screen.getByTestId('count-confirmed'));
    expect(screen.getAllByTestId('job-row').map((r) => r.dataset.state)).toEqual(['confirmed', 'confirmed']);
    await fireEvent.click(screen.getByTestId('count-confirmed'));
    expect(screen.getAllByTestId('job-row')).toHaveLength(4);
  });

  it('says why a key is unsure: the reason and how the key and the answer were read', () => {
    const c = new JobsController();
    c.selectedId = 3;
    const unsure: ProblemStatus = {
      ...problem(0, 'unsure'), key: '35 cm', majority: null, reason: 'key_reproduced',
      check: { equal: false, gold: '35 cm', gold_found: 'whole', pred: '35 mm', pred_found: 'boxed',
        gold_read: '35·"cm"', pred_read: '35·"mm"', rule: 'units' },
    };
    c.table = table('done', [unsure]);
    c.selectedProblem = 0;
    render(JobPanel, { controller: c });
    expect(screen.getByTestId('job-row').querySelector('.badge')!.getAttribute('title'))
      .toBe('most samples disagree with the key, but some reproduced it');
    expect(screen.getByTestId('unsure-reason').textContent).toBe('most samples disagree with the key, but some reproduced it.');
    expect(screen.getByTestId('key-check').textContent).toBe('Key read as 35·"cm"; answer 35 mm read as 35·"mm": the units differ.');
  });

  it('tells the user to raise the token limit when many samples were cut off', () => {
    const c = new JobsController();
    c.selectedId = 3;
    c.table = table('done', [problem(0, 'confirmed'), { ...problem(1, 'unsure'), answers: [null, null], cut_off: 2 }]);
    render(JobPanel, { controller: c });
    expect(screen.queryByTestId('cut-off-notice')).toBeNull();
    cleanup();
    // Rust decides when there are many (ponder_jobs::report::many_cut_off).
    c.table = { ...c.table, counts: { ...c.table.counts, many_cut_off: true } };
    render(JobPanel, { controller: c });
    expect(screen.getByTestId('cut-off-notice').textContent!.trim()).toBe(
      '2 of 4 samples reached the token limit (100) before they answered. A larger limit would settle more unsure problems than more samples.');
  });
});
