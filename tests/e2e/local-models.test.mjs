// The Models list in the real window, over fake versions of each tool's folder layout built
// around real model files: the Hugging Face cache (a snapshot link to the 0.5B test model's
// blob), LM Studio's folder (the 1.5B test model, hard-linked), Ollama's store (a manifest
// naming a random-weight Llama blob) and a folder of the user's (a random-weight Qwen3, and a
// file that is not a model). One is put to use without a restart, the status bar following its
// load; a folder comes off the list and its files stay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exampleBinary, launchApp } from './webdriver.mjs';

const models = process.env.PONDER_TEST_MODELS ?? path.join(os.homedir(), '.cache/ponder/test-models');
const small = path.join(models, 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf');
// Loading it takes a couple of seconds: long enough to watch the status bar follow it.
const large = path.join(models, 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf');

/// A second name for the big file: a hard link, or a copy across file systems.
function linkOrCopy(from, to) {
  fs.mkdirSync(path.dirname(to), { recursive: true });
  try { fs.linkSync(from, to); } catch { fs.copyFileSync(from, to); }
}

test('the Models list finds GGUF files in all four kinds of folders and uses one', async (t) => {
  for (const m of [small, large]) assert.ok(fs.existsSync(m), `test model ${m} is missing: run scripts/fetch-test-models.sh`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-e2e-local-'));
  const home = path.join(dir, 'home');
  // Hugging Face: blobs/ and a snapshot link, as hf-hub and huggingface_hub write them.
  const repo = path.join(dir, 'hf/hub/models--Qwen--Qwen2.5-Coder-0.5B-Instruct-GGUF');
  const snapshot = path.join(repo, 'snapshots/0123abc/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf');
  fs.mkdirSync(path.dirname(snapshot), { recursive: true });
  fs.mkdirSync(path.join(repo, 'blobs'), { recursive: true });
  fs.symlinkSync(small, path.join(repo, 'blobs/e3d42b59'));
  fs.symlinkSync(path.join(repo, 'blobs/e3d42b59'), snapshot);
  // LM Studio: ~/.lmstudio/models/<publisher>/<repository>/<file>.
  const lms = path.join(home, '.lmstudio/models/lmstudio-community/Qwen2.5-Coder-1.5B-Instruct-GGUF/Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf');
  linkOrCopy(large, lms);
  // Ollama: a manifest whose model layer names a blob.
  const ollama = path.join(dir, 'ollama');
  const llama = path.join(dir, 'tiny-llama.gguf');
  execFileSync(exampleBinary('tiny_model'), ['llama', llama]);
  const digest = 'sha256:' + 'ab'.repeat(32);
  linkOrCopy(llama, path.join(ollama, 'blobs', digest.replace(':', '-')));
  const manifest = path.join(ollama, 'manifests/registry.ollama.ai/library/tiny-llama/latest');
  fs.mkdirSync(path.dirname(manifest), { recursive: true });
  fs.writeFileSync(manifest, JSON.stringify({ schemaVersion: 2, layers: [
    { mediaType: 'application/vnd.ollama.image.model', digest, size: fs.statSync(llama).size },
    { mediaType: 'application/vnd.ollama.image.template', digest: 'sha256:' + 'cd'.repeat(32), size: 10 }] }));
  // The user's folder, with a model two levels down and a file that only looks like one.
  const mine = path.join(dir, 'my-models');
  fs.mkdirSync(path.join(mine, 'experiments'), { recursive: true });
  execFileSync(exampleBinary('tiny_model'), ['qwen3', path.join(mine, 'experiments/tiny-qwen3.gguf')]);
  fs.writeFileSync(path.join(mine, 'notes.gguf'), 'not a model');

  const dataDir = path.join(dir, 'data');
  fs.mkdirSync(dataDir);
  fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({ threads: 2, max_sequences: 2, context_size: 1024, model_folders: [mine] }));
  const app = await launchApp({ HOME: home, PONDER_DATA_DIR: dataDir, PONDER_MODEL: small, HF_HOME: path.join(dir, 'hf'), HF_HUB_CACHE: undefined,
    OLLAMA_MODELS: ollama });
  try {
    await app.click('[data-testid="tab-settings"]');
    await app.find('[data-testid=local-model]', 60000);
    const rows = await app.run(`return [...document.querySelectorAll('[data-testid=local-model]')].map((e) =>
      [e.dataset.source, e.dataset.runs, e.textContent.replace(/\\s+/g, ' ').trim()])`);
    assert.deepEqual(rows.map(([source, runs]) => [source, runs]),
      [['hugging_face', 'yes'], ['lm_studio', 'yes'], ['ollama', 'yes'], ['folder', 'yes'], ['folder', 'no']], JSON.stringify(rows));
    assert.match(rows[0][2], /Hugging Face cache · Qwen\/Qwen2\.5-Coder-0\.5B-Instruct-GGUF.*qwen2 · Q5_0 · 0\.49 GB · 32,768 tokens.*In use/);
    assert.match(rows[1][2], /LM Studio · lmstudio-community\/Qwen2\.5-Coder-1\.5B-Instruct-GGUF.*qwen2 · Q4K · 1\.12 GB/);
    assert.match(rows[2][2], /Ollama · tiny-llama:latest.*llama/);
    assert.match(rows[3][2], /Your folder · .*my-models.*qwen3/);
    assert.match(rows[4][2], /notes\.gguf.*not a GGUF file/);
    await app.run(`document.querySelector('[data-testid=local-models]').scrollIntoView()`);
    await app.screenshot('local-models', (png) => png.length > 10_000);

    // Use the LM Studio copy: it loads in place of the current model, without a restart. Every
    // state the status bar shows meanwhile is recorded, once the first model has loaded (on a
    // busy machine it may still be loading when the list appears, and the bar would show it).
    await app.find('[data-testid=status-model]', 120000);
    await app.run(`window.__shown = [];
      new MutationObserver(() => {
        const bar = document.querySelector('[data-testid=status-bar]');
        const label = bar?.querySelector('[data-testid=status-loading]')?.textContent;
        const figure = bar?.querySelector('[data-testid=status-load-progress]');
        if (label) window.__shown.push([label, figure ? Number(figure.dataset.done) : null, figure ? Number(figure.dataset.total) : null]);
      }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
      document.querySelectorAll('[data-testid=local-model]')[1].querySelector('[data-testid=local-model-use]').click()`);
    await app.waitUntil(`return document.querySelector('[data-testid=model-card]')?.textContent.includes(${JSON.stringify(lms)})`, 'the card to show the LM Studio file', 60000);
    await app.waitUntil(`return document.querySelectorAll('[data-testid=local-model]')[1]?.querySelector('[data-testid=local-model-in-use]') !== null`,
      'the LM Studio entry to be in use', 60000);
    // A picture of the bar partway, for the docs (when a poll is quick enough to catch one).
    for (let end = Date.now() + 5000; Date.now() < end;) {
      const done = await app.run(`return Number(document.querySelector('[data-testid=status-load-progress]')?.dataset.done ?? -1)`);
      if (done > 0) { await app.screenshot('model-loading'); break; }
      if (done < 0 && await app.run(`return document.querySelector('[data-testid=status-model]') !== null`)) break;
    }
    await app.find('[data-testid=status-model]', 60000);
    // The bar named the file and rose through the load.
    const shown = await app.run('return window.__shown');
    assert.ok(shown.length > 0 && shown.every(([label]) => label === 'Loading Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf…'), JSON.stringify(shown));
    const figures = shown.filter(([, done]) => done !== null);
    assert.ok(figures.some(([, done, total]) => done > 0 && done < total), `no figure partway: ${JSON.stringify(shown)}`);
    assert.ok(figures.every(([, done], i) => i === 0 || figures[i - 1][1] <= done), JSON.stringify(figures));
    t.diagnostic(`the status bar showed the load ${shown.length} times, ${figures.length} with a figure: ${figures.map(([, d, n]) => Math.floor(100 * d / n) + ' %').join(', ')}`);

    // Taking the folder off the list hides its models and deletes nothing.
    await app.click('[data-testid=model-folder-remove]');
    await app.waitUntil(`return document.querySelectorAll('[data-testid=local-model][data-source=folder]').length === 0`, 'the folder\'s models to go');
    assert.ok(fs.existsSync(path.join(mine, 'experiments/tiny-qwen3.gguf')) && fs.existsSync(path.join(mine, 'notes.gguf')));
    // The model is remembered once it has loaded.
    const saved = () => JSON.parse(fs.readFileSync(path.join(dataDir, 'settings.json'), 'utf8'));
    for (let end = Date.now() + 120000; saved().model_path !== lms && Date.now() < end;) await new Promise((r) => setTimeout(r, 250));
    assert.equal(saved().model_path, lms);
    assert.deepEqual(saved().model_folders, []);
  } finally {
    await app.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
