// Model choice and the Think switch in the real window. The first-run screen's list of other
// models downloads one (a random-weight Qwen3 with Qwen3's published template, served as
// Qwen3-1.7B by a stand-in hub on loopback), the app opens it, and the chat's Think switch turns
// its thinking off and on again for the conversation. The settings list the same models, mark
// the one in use, and switch to another one without a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fakeHub } from './hub.mjs';
import { exampleBinary, launchApp } from './webdriver.mjs';

/** The thinking and answer token counts under each reply, from its figures line. */
const COUNTS = `return [...document.querySelectorAll('[data-testid=stats]')].map((s) => {
  const m = /(\\d+) thinking \\+ (\\d+) answer tokens/.exec(s.textContent);
  return m ? [Number(m[1]), Number(m[2])] : null;
})`;

test('models: another model from the list downloads and opens, and the Think switch works', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-e2e-models-'));
  const tiny = path.join(dir, 'tiny-qwen3.gguf');
  execFileSync(exampleBinary('tiny_model'), ['qwen3', tiny]);
  const hub = await fakeHub({ 'unsloth/Qwen3-1.7B-GGUF/Qwen3-1.7B-Q4_K_M.gguf': tiny, 'unsloth/Qwen3-4B-GGUF/Qwen3-4B-Q4_K_M.gguf': tiny });
  const dataDir = path.join(dir, 'data');
  fs.mkdirSync(dataDir);
  fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({
    threads: 2, max_sequences: 2, context_size: 1024, temperature: 0, max_tokens: 12,
  }));
  const app = await launchApp({ PONDER_DATA_DIR: dataDir, HF_HOME: path.join(dir, 'hf'), HF_ENDPOINT: hub.url });
  try {
    // The first-run screen lists the alternatives with their size and thinking behaviour.
    const before = fs.statSync(await app.screenshot('model-list', (png) => png.length > 10_000)).size;
    await app.click('[data-testid=other-models] summary');
    const listed = await app.run(`return [...document.querySelectorAll('[data-testid=catalog-model]')].map((e) => e.dataset.model)`);
    assert.deepEqual(listed, ['qwen3-1.7b', 'qwen3-4b', 'deepseek-r1-distill-qwen-7b', 'deepseek-r1-distill-llama-8b', 'deepseek-r1-0528-qwen3-8b']);
    const row = await app.text('[data-testid=catalog-model][data-model="qwen3-1.7b"]');
    assert.match(row, /Qwen3-1\.7B \(Q4_K_M, 1\.1 GB\)/);
    assert.match(row, /qwen3 · thinks first unless turned off · needs 4 GB of memory/);
    // A picture of the open list (WebKit may hand back a frame from before the click).
    await app.screenshot('model-list', (png) => png.length > before * 1.3);

    await app.click('[data-testid=catalog-action][data-model="qwen3-1.7b"]');
    await app.find('[data-testid=workbench]', 120000);
    await app.waitUntil(`return /qwen3 · thinks first unless turned off/.test(document.querySelector('[data-testid=status-architecture]')?.textContent ?? '')`,
      'the status bar to show the family', 120000);

    // Think is on by default for this model, and can be turned off.
    const toggle = '[data-testid=think-toggle]';
    assert.deepEqual(await app.run(`const t = document.querySelector('${toggle}'); return [t.checked, t.disabled]`), [true, false]);
    await app.type('[data-testid=composer]', 'What is 2 + 3?');
    await app.click('[data-testid=send]');
    await app.waitUntil(`return document.querySelectorAll('[data-testid=stats]').length === 1`, 'the first reply', 120000);
    await app.click(toggle);
    await app.waitUntil(`return document.querySelector('${toggle}').checked === false`, 'the switch to turn off');
    await app.type('[data-testid=composer]', 'And 3 + 4?');
    await app.click('[data-testid=send]');
    await app.waitUntil(`return document.querySelectorAll('[data-testid=stats]').length === 2`, 'the second reply', 120000);
    const [on, off] = await app.run(COUNTS);
    // Random weights never close a thought: with Think on every token is thinking; off, none is.
    assert.ok(on[0] > 0 && on[1] === 0, `with Think on: ${on}`);
    assert.ok(off[0] === 0 && off[1] > 0, `with Think off: ${off}`);
    assert.equal(await app.run(`return document.querySelectorAll('[data-testid=thinking]').length`), 1, 'only the first reply thought');
    await app.screenshot('think-switch', (png) => png.length > 20_000);

    // The switch belongs to the conversation: a new one starts on again.
    await app.click('[data-testid=new-chat]');
    await app.waitUntil(`return document.querySelector('${toggle}').checked === true`, 'a new conversation to think');

    // The settings list the same models, this one in use and the rest to download.
    await app.click('[data-testid=tab-settings]');
    await app.find('[data-testid=catalog-model][data-model="qwen3-1.7b"] [data-testid=catalog-in-use]');
    assert.match(await app.text('[data-testid=catalog-action][data-model="qwen3-4b"]'), /^Download$/);
    assert.match(await app.text('[data-testid=model-card]'), /qwen3 · thinks first unless turned off/);
    await app.run(`document.querySelector('[data-testid=model-catalog]').scrollIntoView()`);
    await app.screenshot('settings-models', (png) => png.length > 20_000);

    // Another one, from the settings: downloaded and in use at once, without a restart.
    await app.click('[data-testid=catalog-action][data-model="qwen3-4b"]');
    await app.find('[data-testid=catalog-model][data-model="qwen3-4b"] [data-testid=catalog-in-use]', 120000);
    assert.match(await app.text('[data-testid=catalog-action][data-model="qwen3-1.7b"]'), /^Use$/);
    assert.match(await app.text('[data-testid=model-card]'), /Qwen3-4B-Q4_K_M\.gguf/);
  } finally {
    await app.close();
    hub.server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
