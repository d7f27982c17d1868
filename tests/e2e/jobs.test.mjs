// A keyed problem set through the real app with real weights: the file arrives the way an OS
// drop does (Tauri's drag-drop event with its path), is previewed, runs to completion on the
// 0.5B test model, and every problem gets a verdict; Print prints the report to a PDF through
// GTK's print dialog. After a restart the job is still listed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchApp, shotsDir } from './webdriver.mjs';

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
  // A home folder without a Documents folder: GTK prints to a file in the working folder.
  const env = { PONDER_DATA_DIR: dataDir, PONDER_MODEL: small, HOME: dataDir };
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
    // Two fixed samples each (no budget), so that the run's length is known.
    await app.run(`const i = document.querySelector('[data-testid=opt-max-samples]'); i.value = ''; i.dispatchEvent(new Event('input', { bubbles: true }));`);
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
    // What the shareable report (HTML export, Print) is made from: the disputed problem comes
    // with the answer of a sample that gave the majority's 5.
    const report = await app.run(`const ipc = window.__TAURI_INTERNALS__;
      return ipc.invoke('list_jobs').then((jobs) => ipc.invoke('job_report', { id: jobs[0].id }))`);
    assert.equal(report.title, 'Validation of arithmetic.csv');
    assert.equal(report.table.export_names.html, 'arithmetic.report.html');
    const disputed = report.table.problems.find((p) => p.verdict === 'disputed');
    const shown = report.shown.find((s) => s.problem_idx === disputed.idx);
    assert.ok(shown && /5/.test(shown.answer), JSON.stringify(report.shown));
    // Print: GTK's print dialog opens over the window, and printing to a file gives the report
    // as a PDF, with the disputed problem in it.
    const pdf = path.join(process.cwd(), 'output.pdf');
    fs.rmSync(pdf, { force: true });
    try {
      await app.click('[data-testid=print-report]');
      fs.mkdirSync(shotsDir, { recursive: true });
      await app.printToFile(pdf, 'print-dialog');
      const text = spawnSync('pdftotext', [pdf, '-'], { encoding: 'utf8' }).stdout.replace(/\s+/g, ' ');
      assert.match(text, /^Validation of arithmetic\.csv 3 problems, 2 samples each .* Needs a look \(1\) 3 · Disputed Question What is 9 - 4\? Key 7 Most common answer 5/, text.slice(0, 400));
    } finally {
      fs.rmSync(pdf, { force: true });
    }
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

/// Every stored sample as "problem:sample:answer", read with Python's sqlite3 (Node 20 has none)
/// while the app is not running.
function storedSamples(db) {
  if (!fs.existsSync(db)) return [];
  const script = `import sqlite3, sys, json
try:
    c = sqlite3.connect(sys.argv[1], timeout=5)
    print(json.dumps([f"{p}:{s}:{a}" for p, s, a in c.execute("SELECT problem_idx, sample_idx, answer FROM samples ORDER BY 1, 2")]))
except sqlite3.OperationalError as e:
    print(e, file=sys.stderr)
    print("[]")`;
  const out = spawnSync('python3', ['-c', script, db]);
  assert.equal(out.stderr.toString(), '', `reading ${db}`);
  return JSON.parse(out.stdout.toString());
}

/// The pid of the app whose data folder is `dataDir` (WebKitWebDriver starts it; the test never
/// sees its pid otherwise).
function appPid(dataDir) {
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`).toString();
      const env = fs.readFileSync(`/proc/${pid}/environ`).toString().split('\0');
      if (cmd.includes('ponder-app') && env.includes(`PONDER_DATA_DIR=${dataDir}`)) return Number(pid);
    } catch { /* gone, or not ours */ }
  }
  return null;
}

test('jobs: the app killed with SIGKILL mid-job resumes with no finished sample lost or repeated', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-e2e-kill-'));
  const csv = path.join(dataDir, 'sums.csv');
  fs.writeFileSync(csv, 'question,answer\n' + [3, 5, 7, 9].map((n) => `What is ${n} + ${n}? Explain briefly.,${2 * n}`).join('\n') + '\n');
  fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({
    threads: 2, max_sequences: 2, context_size: 2048, temperature: 0, max_tokens: 96,
  }));
  const db = path.join(dataDir, 'jobs.sqlite');
  const env = { PONDER_DATA_DIR: dataDir, PONDER_MODEL: small };
  let app = await launchApp(env);
  try {
    await app.find('[data-testid=workbench]');
    await app.click('[data-testid=tab-jobs]');
    await app.click('[data-testid=add-files]');
    await app.chooseInDialog('Add question files…', csv);
    await app.find('[data-testid=preview-facts]');
    await app.run(`const i = document.querySelector('[data-testid=opt-samples]'); i.value = '2'; i.dispatchEvent(new Event('input', { bubbles: true }));`);
    await app.run(`const i = document.querySelector('[data-testid=opt-max-samples]'); i.value = ''; i.dispatchEvent(new Event('input', { bubbles: true }));`);
    await app.click('[data-testid=start-job]');
    await app.find('[data-testid=job]');
    // Killed once the window says some samples are stored and others are not.
    await app.waitUntil(`const m = document.querySelector('[data-testid=job-progress-text]')?.textContent.match(/^(\\d+) of 8/);
      return m && Number(m[1]) >= 2`, 'two samples stored', 300_000);
    const pid = appPid(dataDir);
    assert.ok(pid, 'the app process');
    process.kill(pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 500));
    const before = storedSamples(db);
    assert.ok(before.length >= 2 && before.length < 8, `${before.length} samples at the kill`);
    await app.close();

    app = await launchApp(env);
    await app.click('[data-testid=tab-jobs]');
    assert.match(await app.text('[data-testid=job-item]'), /sums\.csv\s*Paused/);
    await app.click('[data-testid=job-item]');
    await app.click('[data-testid=resume]');
    await app.waitUntil(`return document.querySelector('[data-testid=job-state]')?.textContent === 'Done'`, 'the resumed job to finish', 300_000);
    assert.equal(await app.text('[data-testid=job-progress-text]'), '8 of 8 samples');
    await app.close();
    const after = storedSamples(db);
    assert.equal(after.length, 8, 'every sample of every problem');
    assert.equal(new Set(after.map((s) => s.split(':').slice(0, 2).join(':'))).size, 8, 'none twice');
    for (const s of before) assert.ok(after.includes(s), `sample ${s.split(':').slice(0, 2).join(':')} stored before the kill is unchanged`);
  } finally {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
