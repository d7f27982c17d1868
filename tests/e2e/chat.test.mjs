// A chat in the real app window with real weights: the 0.5B test model carrying DeepSeek-R1's
// chat template, so the reply takes the whole thinking path (a small thinking budget keeps it
// short). The conversation must still be there after a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchApp, exampleBinary } from './webdriver.mjs';

const models = process.env.PONDER_TEST_MODELS ?? path.join(os.homedir(), '.cache/ponder/test-models');
const small = path.join(models, 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf');

// Records what the thread looks like at every change, so the test can tell a stream from a
// reply that appeared at once.
const RECORD = `
  window.__frames = [];
  new MutationObserver(() => {
    const thinking = document.querySelector('[data-testid=thinking-text]');
    const answer = document.querySelector('[data-testid=answer]');
    const block = document.querySelector('[data-testid=thinking]');
    window.__frames.push({ thinking: thinking ? thinking.textContent.length : 0, answer: answer ? answer.textContent.length : 0,
      open: block ? block.open : null });
  }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
`;

test('chat: thinking and answer stream in from the real model, and the conversation persists', async () => {
  assert.ok(fs.existsSync(small), `test model ${small} is missing: run scripts/fetch-test-models.sh`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-e2e-chat-'));
  const r1 = path.join(dataDir, 'r1-0.5b.gguf');
  execFileSync(exampleBinary('r1_test_model'), [small, r1]);
  fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({
    threads: 2, max_sequences: 2, context_size: 2048, temperature: 0, thinking_budget: 24, max_tokens: 96,
  }));
  const env = { PONDER_DATA_DIR: dataDir, PONDER_MODEL: r1 };
  let app = await launchApp(env);
  try {
    await app.find('[data-testid=workbench]');
    await app.waitUntil(`return document.querySelector('[data-testid=status-model]')?.textContent`, 'the model to load', 120000);
    // R1 models always think: the Think switch is shown on and fixed, and the status bar says so.
    assert.deepEqual(await app.run(`const t = document.querySelector('[data-testid=think-toggle]'); return [t.checked, t.disabled]`), [true, true]);
    assert.match(await app.text('[data-testid=status-architecture]'), /^qwen2 · always thinks first$/);
    await app.run(RECORD);
    await app.type('[data-testid=composer]', 'What is 2 + 3?');
    await app.click('[data-testid=send]');
    assert.equal(await app.text('[data-testid=question]'), 'What is 2 + 3?');
    await app.find('[data-testid=stats]', 180000);

    const frames = await app.run('return window.__frames');
    const thinkingLengths = new Set(frames.filter((f) => f.answer === 0).map((f) => f.thinking).filter((n) => n > 0));
    assert.ok(thinkingLengths.size >= 3, `the thinking streamed in pieces (${[...thinkingLengths]})`);
    assert.ok(frames.some((f) => f.answer === 0 && f.thinking > 0 && f.open === true), 'the thinking block was open while thinking');
    const answerLengths = new Set(frames.map((f) => f.answer).filter((n) => n > 0));
    assert.ok(answerLengths.size >= 2, `the answer streamed in pieces (${[...answerLengths]})`);

    assert.equal(await app.run(`return document.querySelector('[data-testid=thinking]').open`), false, 'folded once answered');
    assert.ok((await app.run(`return document.querySelector('[data-testid=thinking-text]').textContent`)).trim().length > 0);
    const answer = await app.text('[data-testid=answer]');
    assert.ok(answer.trim().length > 0);
    assert.match(await app.text('[data-testid=stats]'), /First token \d+\.\d\d s · \d+\.\d tok\/s · \d+ thinking \+ \d+ answer tokens/);
    await app.click('[data-testid=thinking] summary');
    await app.screenshot('chat', (png) => png.length > 20_000);
    await app.close();

    // Kept in SQLite: after a restart the conversation is listed under its question.
    app = await launchApp(env);
    const title = await app.text('[data-testid=conversation] button.title');
    assert.equal(title, 'What is 2 + 3?');
    await app.click('[data-testid=conversation] button.title');
    assert.equal(await app.text('[data-testid=answer]'), answer);
  } finally {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
