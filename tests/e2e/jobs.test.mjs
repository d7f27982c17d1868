// A keyed problem set through the real app with real weights: the file arrives the way an OS
// drop does (Tauri's drag-drop event with its path), is previewed, runs to completion on the
// 0.5B test model, and every problem gets a verdict. After a restart the job is still listed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchApp } from './webdriver.mjs';

const models = process.env.PONDER_TEST_MODELS ?? path.join(os.homedir(), '.cache/ponder/test-models');
const small = path.join(models, 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf');

test('jobs: a dropped keyed CSV runs to completion and every problem gets a verdict', async () => {
  assert.ok(fs.existsSync(small), `test model ${small} is missing: run scripts/fetch-test-models.sh`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-e2e-jobs-'));
  const csv = path.join(dataDir, 'arithmetic.csv');
  fs.writeFileSync(csv, 'question,answer\nWhat is 2 + 2?,4\nWhat is 5 * 3?,15\nWhat is 9 - 4?,7\n');
  fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({
    threads: 2, max_sequences: 4, context_size: 2048, temperature: 0, max_tokens: 128,
  }));
  const env = { PONDER_DATA_DIR: dataDir, PONDER_MODEL: small };
  let app = await launchApp(env);
  try {
    await app.find('[data-testid=workbench]');
    // A page cannot grant itself a file: a made-up drop event opens nothing.
    await app.run(`window.__TAURI_INTERNALS__.invoke('plugin:event|emit', { event: 'ponder://files-dropped', payload: [arguments[0]] })`, [csv]);
    await app.waitUntil(`return document.querySelector('[data-testid=preview-error]')?.textContent`, 'the refusal');
    assert.match(await app.text('[data-testid=preview-error]'), /may only open files you drop on its window or pick/);
    await app.click('[data-testid=preview-file] header button');
    // Picked in the native dialog, as a user does.
    await app.click('[data-testid=add-files]');
    await app.chooseInDialog('Add question files…', csv);
    assert.match(await app.text('[data-testid=preview-facts]'), /3 problems · CSV · UTF-8\s*· answer key in “answer”/);
    await app.run(`const i = document.querySelector('[data-testid=opt-samples]'); i.value = '2'; i.dispatchEvent(new Event('input', { bubbles: true }));`);
    await app.click('[data-testid=start-job]');
    await app.find('[data-testid=job]');
    await app.waitUntil(`return document.querySelector('[data-testid=job-state]')?.textContent === 'Done'`, 'the job to finish', 300000);
    await app.waitUntil(`return document.querySelectorAll('[data-testid=job-row]').length === 3 &&
      [...document.querySelectorAll('[data-testid=job-row]')].every((r) => ['confirmed', 'disputed', 'unsure'].includes(r.dataset.state))`,
      'a verdict on every problem', 30000);
    assert.equal(await app.text('[data-testid=job-progress-text]'), '6 of 6 samples');
    const counts = await app.run(`return [...document.querySelectorAll('[data-testid^=count-]')].map((b) => b.textContent.replace(/\\s+/g, ' ').trim())`);
    const total = counts.reduce((n, c) => n + Number(c.match(/(\d+)$/)[1]), 0);
    assert.equal(total, 3, counts.join(', '));
    // The planted wrong key (9 - 4 = 7) is caught: the report lists it first, as disputed.
    const first = await app.run(`const r = document.querySelector('[data-testid=job-row]'); return [r.dataset.state, r.textContent]`);
    assert.equal(first[0], 'disputed');
    assert.match(first[1], /What is 9 - 4\?\s*7\s*5 · 5/);
    await app.click('[data-testid=job-row] td.q');
    await app.waitUntil(`return document.querySelectorAll('[data-testid=sample]').length === 2`, 'the samples of a problem');
    await app.screenshot('jobs-report', (png) => png.length > 20_000);
    await app.close();

    // Kept in SQLite: the job is listed after a restart.
    app = await launchApp(env);
    await app.click('[data-testid=tab-jobs]');
    assert.match(await app.text('[data-testid=job-item]'), /arithmetic\.csv\s*Done · 6\/6/);
  } finally {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
