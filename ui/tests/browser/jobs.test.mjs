// Browser test of a batch job: files dropped on the window, their preview, the job running
// with live progress, and the validation report with its export. Rust is mocked in the page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useBrowser, mockIpc, modelInfo as info, defaultSettings as settings } from './harness.mjs';

const ctx = useBrowser();

const mocks = {
  model_status: { state: 'ready', info },
  get_settings: settings,
  server_status: { state: 'off' },
  engine_status: { state: 'empty' },
  list_conversations: [],
  list_jobs: () => window.__jobs ?? [],
  preview_file: ({ path }) => {
    // As Rust sends a CommandError: a code the window translates, and its values.
    if (path.endsWith('.pdf')) throw { code: 'read.unknown_format', params: { path: 'notes.pdf', extensions: '.txt, .md, .csv, .tsv, .jsonl, .json or .xlsx' },
      message: 'notes.pdf: unsupported file type (use .txt, .md, .csv, .tsv, .jsonl, .json or .xlsx)' };
    return { path, name: 'algebra.csv', format: 'csv', encoding: 'UTF-8', problem_count: 3, has_key: true, suggested_samples: 2, suggested_max_samples: 8,
      columns: { question: 'question', key: 'answer', id: null, extra: [] },
      warnings: [{ line: 5, code: 'empty_question', params: {}, message: 'empty question; row skipped' },
        { line: 0, code: 'uncertain_encoding', params: { confidence: '40%' }, message: '' }], more_warnings: 2,
      problems: [{ id: '1', question: 'What is 2 + 2?', key: '4', extra: [], line: 2 },
        { id: '2', question: 'What is 3 * 3?', key: '10', extra: [], line: 3 },
        { id: '3', question: 'Is 1 prime?', key: 'no', extra: [], line: 4 }] };
  },
  create_job: ({ path, options }) => {
    window.__created = { path, options };
    const job = { id: 7, name: 'algebra.csv', source: path, state: 'queued', created_at: 0, problems: 3,
      samples_total: 3 * options.samples, samples_done: 0, has_key: true };
    window.__jobs = [job];
    return job;
  },
  job_table: ({ id }) => {
    const done = window.__finished;
    const p = (idx, question, key, answers, majority, verdict) => ({ idx, id: String(idx + 1), question, key, line: idx + 2,
      samples_done: done ? 2 : 0, samples_total: 2, answers: done ? answers : [], majority: done ? majority : null,
      agreement: done ? (majority ? 1 : 0.5) : 0, verdict: done ? verdict : null, reason: done && verdict === 'unsure' ? 'split' : null });
    const problems = [p(0, 'What is 2 + 2?', '4', ['4', '4'], '4', 'confirmed'), p(1, 'What is 3 * 3?', '10', ['9', '9'], '9', 'disputed'),
      p(2, 'Is 1 prime?', 'no', ['no', 'yes'], null, 'unsure')];
    return { summary: { ...window.__jobs[0], id, state: done ? 'done' : 'running', samples_done: done ? 6 : 0 },
      options: window.__created.options, problems,
      counts: done ? { confirmed: 1, disputed: 1, unsure: 1, answered: 0, pending: 0, samples_done: 6, cut_off: 0, many_cut_off: false } : { confirmed: 0, disputed: 0, unsure: 0, answered: 0, pending: 3, samples_done: 0, cut_off: 0, many_cut_off: false },
      report_order: done ? [1, 2, 0] : [0, 1, 2],
      export_names: { csv: 'algebra.results.csv', jsonl: 'algebra.results.jsonl', markdown: 'algebra.report.md', html: 'algebra.report.html' } };
  },
  problem_samples: ({ problemIdx }) => problemIdx !== 1 ? [] : [0, 1].map((s) => ({ problem_idx: 1, sample_idx: s, answer: 'So $3 \\times 3 = \\boxed{9}$.',
    thinking: 'Three threes make nine.', extracted: '9', finish_reason: 'stop', prompt_tokens: 20, thinking_tokens: 5, answer_tokens: 8, ttft_ms: 100, duration_ms: 900 })),
  run_job: ({ id, on, onEvent }) => {
    window.__ranOn = on;
    const script = [
      { event: 'delta', problem_idx: 1, sample_idx: 0, channel: 'thinking', text: 'Three threes' },
      { event: 'progress', done: 3, total: 6, tokens_per_second: 42.5, eta_seconds: 75 },
    ];
    let i = 0;
    const tick = () => {
      if (i < script.length) { window.__emit(onEvent, script[i++]); return setTimeout(tick, 40); }
      if (window.__hold) return setTimeout(tick, 40);
      window.__finished = true;
      window.__jobs = [{ ...window.__jobs[0], state: 'done', samples_done: 6 }];
      window.__emit(onEvent, { event: 'progress', done: 6, total: 6, tokens_per_second: 40, eta_seconds: 0 });
      window.__emit(onEvent, { event: 'state', state: 'done', error: null });
    };
    setTimeout(tick, 40);
    return null;
  },
  pause_job: () => null,
  pick_save_path: (args) => { window.__saveDialog = args; return '/home/teacher/algebra.report.md'; },
  export_job: (args) => { window.__exported = args; return null; },
  // What Rust would send: the table, and the sample shown for each problem that needs a look.
  job_report: async ({ id }) => ({ title: 'Validation of algebra.csv', table: await window.__TAURI_INTERNALS__.invoke('job_table', { id }),
    shown: [{ problem_idx: 1, sample_idx: 0, answer: 'So $3 \\times 3 = \\boxed{9}$.', thinking: 'Three threes make $9$.' },
      { problem_idx: 2, sample_idx: 1, answer: 'Yes, $1$ is prime.', thinking: '' }] }),
  save_document: ({ path, contents }) => { window.__document = { path, contents }; return null; },
  print_document: ({ html, title }) => { window.__printed = { html, title }; return null; },
};


test('jobs: dropped files are previewed, run with live progress, and reported with disputed keys first', async () => {
  const page = await ctx.browser.newPage();
  await mockIpc(page, mocks);
  await page.addInitScript(() => { window.__hold = true; });
  await page.goto(ctx.server.url);
  await page.getByTestId('workbench').waitFor();

  // Dragging over the window shows where to drop; dropping opens the preview.
  await page.evaluate(() => window.__tauriEvent('tauri://drag-enter', { paths: ['/data/algebra.csv'], position: { x: 10, y: 10 } }));
  await page.getByTestId('drop-overlay').waitFor();
  // The drop: the window system's event (hides the zone), then Rust's, with the granted paths.
  await page.evaluate(() => window.__tauriEvent('tauri://drag-drop', { paths: ['/data/algebra.csv', '/data/notes.pdf'], position: { x: 10, y: 10 } }));
  await page.evaluate(() => window.__tauriEvent('ponder://files-dropped', ['/data/algebra.csv', '/data/notes.pdf']));
  await page.getByTestId('preview').waitFor();
  assert.equal(await page.getByTestId('drop-overlay').count(), 0);
  assert.equal(await page.getByTestId('preview-file').count(), 2);
  assert.match(await page.getByTestId('preview-facts').textContent(), /3 problems · CSV · UTF-8\s+· answer key in “answer”/);
  // A warning about the whole file has no line; past the first hundred, a count.
  assert.deepEqual(await page.getByTestId('preview-warnings').locator('li').allTextContents(), [
    'line 5: empty question; row skipped',
    'the file is not UTF-8, and reads as Chinese (GB18030) with only 40% confidence: its characters may be wrong; save it as UTF-8',
    '… and 2 more warnings',
  ]);
  assert.match(await page.getByTestId('preview-error').textContent(), /notes\.pdf: unsupported file type/);
  // A file with a key starts with the suggested budget: two samples, up to eight while unsure.
  assert.equal(await page.getByTestId('opt-samples').inputValue(), '2');
  assert.equal(await page.getByTestId('opt-max-samples').inputValue(), '8');
  await page.getByTestId('opt-samples').fill('2');
  await page.getByTestId('opt-budget').fill('300');
  await page.getByTestId('opt-max-samples').fill('6');
  assert.equal(await page.getByTestId('start-job').isEnabled(), true);
  await page.getByTestId('start-job').click();

  // Running: live progress, the problem being thought about, pause.
  await page.getByTestId('job').waitFor();
  const created = await page.evaluate(() => window.__created);
  assert.equal(await page.evaluate(() => window.__ranOn), 'local');
  assert.equal(await page.getByTestId('opt-run-on').count(), 0, 'no remote engine: no choice');
  assert.equal(created.path, '/data/algebra.csv');
  assert.equal(created.options.samples, 2);
  assert.equal(created.options.thinking_budget, 300);
  assert.equal(created.options.max_samples, 6);
  await page.waitForFunction(() => document.querySelector('[data-testid=job-progress-text]')?.textContent.includes('42.5 tok/s'));
  assert.match(await page.getByTestId('job-progress-text').textContent(), /3 of 6 samples · 42\.5 tok\/s · 1 min 15 s left/);
  assert.equal(await page.getByTestId('job-row').nth(1).getAttribute('data-state'), 'thinking');
  assert.ok(await page.getByTestId('pause').isVisible());
  await page.getByTestId('job-row').nth(1).click();
  await page.getByTestId('live-sample').waitFor();
  assert.match(await page.getByTestId('live-sample').textContent(), /Three threes/);

  // Done: the report puts the disputed key first, then the unsure problem.
  await page.evaluate(() => { window.__hold = false; });
  await page.waitForFunction(() => document.querySelector('[data-testid=job-state]')?.textContent === 'Done');
  await page.waitForFunction(() => document.querySelector('[data-testid=job-row]')?.dataset.state === 'disputed');
  const states = await page.getByTestId('job-row').evaluateAll((rows) => rows.map((r) => r.dataset.state));
  assert.deepEqual(states, ['disputed', 'unsure', 'confirmed']);
  assert.match(await page.getByTestId('count-confirmed').textContent(), /Confirmed\s*1/);
  assert.match(await page.getByTestId('count-disputed').textContent(), /Disputed\s*1/);
  assert.equal(await page.getByTestId('pause').count(), 0);

  // The problem opened while it ran (now first: disputed) shows its finished samples, with
  // their reasoning and maths.
  assert.equal(await page.getByTestId('job-row').first().getAttribute('class').then((c) => c.includes('selected')), true);
  await page.getByTestId('sample').first().waitFor();
  assert.equal(await page.getByTestId('live-sample').count(), 0);
  assert.equal(await page.getByTestId('sample').count(), 2);
  await page.getByTestId('sample').first().locator('summary').click();
  assert.equal(await page.getByTestId('sample').first().locator('.katex').count(), 1);
  // The panes take the window's height, not their content's (they are size-contained).
  const [table, detail, body] = await page.evaluate(() => ['.table-wrap', '.detail', '.body'].map((s) => document.querySelector(s).getBoundingClientRect().height));
  assert.ok(table === body && detail === body && body > 300, `panes ${table} and ${detail}px tall in a ${body}px body`);
  const shots = path.resolve(import.meta.dirname, '../../../test-output/browser');
  fs.mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, 'job.png') });

  // Filter to the disputed problems only, then export the report.
  await page.getByTestId('count-disputed').click();
  assert.deepEqual(await page.getByTestId('job-row').evaluateAll((rows) => rows.map((r) => r.dataset.state)), ['disputed']);
  await page.getByTestId('export-markdown').click();
  await page.waitForFunction(() => window.__exported);
  assert.deepEqual(await page.evaluate(() => window.__exported), { id: 7, format: 'markdown', path: '/home/teacher/algebra.report.md' });
  assert.deepEqual(await page.evaluate(() => window.__saveDialog), { title: 'Save the results as', fileName: 'algebra.report.md', extension: 'md' });

  // The HTML report: one file that opens offline, maths rendered, nothing fetched.
  await page.getByTestId('export-html').click();
  await page.waitForFunction(() => window.__document);
  assert.deepEqual(await page.evaluate(() => window.__saveDialog), { title: 'Save the results as', fileName: 'algebra.report.html', extension: 'html' });
  const html = await page.evaluate(() => window.__document.contents);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-report-')), 'algebra.report.html');
  fs.writeFileSync(file, html);
  const report = await ctx.browser.newPage();
  const fetched = [];
  report.on('request', (r) => fetched.push(r.url()));
  await report.goto(`file://${file}`);
  await report.evaluate(() => document.fonts.ready);
  assert.deepEqual(fetched.filter((u) => !u.startsWith('file:') && !u.startsWith('data:')), [], 'the report fetches nothing');
  assert.equal(await report.title(), 'Validation of algebra.csv');
  assert.match(await report.getByTestId('report-counts').textContent(), /Confirmed1.*Disputed1.*Unsure1/s);
  // Disputed first, then unsure, each with its question, key, majority and one sample's answer.
  const cards = report.locator('article.problem');
  assert.deepEqual(await cards.evaluateAll((a) => a.map((e) => e.dataset.problem)), ['2', '3']);
  assert.match(await cards.first().textContent(), /2 · Disputed.*What is 3 \* 3\?.*Key\s*10.*Most common answer\s*9.*100% of 2 samples.*Sample 1’s answer/s);
  assert.equal(await cards.first().locator('.answer > .katex, .answer .katex').count(), 2, 'the answer and the folded thinking each hold one formula');
  assert.equal(await cards.first().locator('details').getAttribute('open'), null, 'thinking folded');
  assert.match(await cards.nth(1).textContent(), /the samples' answers are split/);
  // KaTeX's own fonts, from the file itself.
  assert.ok(await report.evaluate(() => document.fonts.check('16px KaTeX_Main') && [...document.fonts].some((f) => f.family === 'KaTeX_Main' && f.status === 'loaded')));
  assert.match(await report.locator('table.settled').textContent(), /1\s*Confirmed/);
  await report.screenshot({ path: path.join(shots, 'html-report.png'), fullPage: true });
  await report.close();

  // Print: the same document goes to the print dialog.
  await page.getByTestId('print-report').click();
  await page.waitForFunction(() => window.__printed);
  // (The same as the saved file but for the minute it was made at.)
  const undated = (html) => html.replace(/made with Ponder on [^<]*/, '');
  const printed = await page.evaluate(() => window.__printed);
  assert.equal(printed.title, 'Validation of algebra.csv');
  assert.equal(undated(printed.html), undated(html));
  await page.close();
});

test('remote engine: set up in settings with the key sent to the keyring, chosen per job, its outage shown', async () => {
  const page = await ctx.browser.newPage();
  await mockIpc(page, {
    ...mocks,
    get_settings: () => window.__settings ?? { ...window.__defaults },
    save_settings: ({ settings }) => (window.__settings = settings),
    // As the app does: a key is kept with the address it was entered for.
    remote_key_stored: () => !!window.__key && window.__key.url === window.__settings?.remote_url,
    set_remote_key: ({ key }) => { window.__key = key ? { key, url: window.__settings?.remote_url } : null; },
    check_remote: () => { if (window.__key?.key !== 'sk-test' || window.__key.url !== window.__settings?.remote_url) throw 'http://gpu:8000/v1/models: the server refused the API key (401); check --api-key'; return 'deepseek-r1'; },
    run_job: ({ on, onEvent }) => {
      window.__ranOn = on;
      setTimeout(() => window.__emit(onEvent, { event: 'waiting', reason: 'connection refused' }), 50);
      return null;
    },
  });
  await page.addInitScript((d) => { window.__defaults = d; }, settings);
  await page.goto(ctx.server.url);
  await page.getByTestId('tab-settings').click();
  await page.getByTestId('remote-url').fill('http://gpu:8000/v1');
  await page.getByTestId('remote-key').fill('sk-test');
  await page.getByTestId('save-settings').click();
  await page.getByTestId('remote-key-remove').waitFor();
  assert.equal(await page.evaluate(() => window.__key.key), 'sk-test');
  assert.equal(await page.getByTestId('remote-key').inputValue(), '', 'the key is not kept in the page');
  const saved = await page.evaluate(() => window.__settings);
  assert.equal(saved.remote_url, 'http://gpu:8000/v1');
  assert.equal(saved.remote_model, null);
  assert.ok(!JSON.stringify(saved).includes('sk-test'), 'the key is not in the settings');
  await page.getByTestId('remote-check').click();
  assert.equal(await page.getByTestId('remote-check-result').textContent(), 'Connected: jobs will use deepseek-r1.');
  // A new address asks for the key again: the stored one was entered for the old address.
  await page.getByTestId('remote-url').fill('http://other:8000/v1');
  await page.getByTestId('save-settings').click();
  await page.waitForFunction(() => !document.querySelector('[data-testid=remote-key-remove]'));
  await page.getByTestId('remote-url').fill('http://gpu:8000/v1');
  await page.getByTestId('save-settings').click();
  await page.getByTestId('remote-key-remove').waitFor();
  await page.getByTestId('remote-key-remove').click();
  await page.getByTestId('remote-check').click();
  await page.waitForFunction(() => document.querySelector('[data-testid=remote-check-result]')?.textContent.includes('401'));

  // A job can now run on the remote engine; while it is down the job says so.
  await page.getByTestId('tab-jobs').click();
  await page.evaluate(() => window.__tauriEvent('ponder://files-dropped', ['/data/algebra.csv']));
  await page.getByTestId('opt-run-on').selectOption('remote');
  await page.getByTestId('start-job').click();
  await page.getByTestId('job-waiting').waitFor();
  assert.equal(await page.evaluate(() => window.__ranOn), 'remote');
  assert.equal(await page.getByTestId('job-waiting').textContent(), 'Waiting for the remote engine: connection refused');
  await page.close();
});
