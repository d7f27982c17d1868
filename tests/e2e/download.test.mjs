// First run, downloading the default model: the app's real hf-hub code against a stand-in for
// the Hugging Face hub on loopback (HF_ENDPOINT) that serves the 0.5B test model as the default
// file. Progress shows, Cancel stops it, starting again resumes from the partial file, and the
// app opens the workbench on the downloaded model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fakeHub } from './hub.mjs';
import { launchApp } from './webdriver.mjs';

const models = process.env.PONDER_TEST_MODELS ?? path.join(os.homedir(), '.cache/ponder/test-models');
const small = path.join(models, 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf');
const REPO = 'unsloth/DeepSeek-R1-Distill-Qwen-1.5B-GGUF';
const FILE = 'DeepSeek-R1-Distill-Qwen-1.5B-Q4_K_M.gguf';

test('first run: the default model downloads with progress, cancels, resumes and opens', async () => {
  assert.ok(fs.existsSync(small), `test model ${small} is missing: run scripts/fetch-test-models.sh`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-e2e-download-'));
  const hub = await fakeHub({ [`${REPO}/${FILE}`]: small });
  hub.slow = true;
  const app = await launchApp({
    PONDER_DATA_DIR: path.join(dir, 'data'),
    HF_HOME: path.join(dir, 'hf'),
    HF_ENDPOINT: hub.url,
  });
  try {
    await app.click('[data-testid=download-default]');
    await app.waitUntil(`return /^[1-9]\\d* MB of 491 MB · \\d+ MB\\/s · /.test(document.querySelector('[data-testid=download-figures]')?.textContent ?? '')`,
      'download progress', 60000);
    await app.screenshot('download', (png) => png.length > 10_000);
    await app.click('[data-testid=cancel-download]');
    await app.find('[data-testid=download-cancelled]');
    const parts = fs.readdirSync(path.join(dir, 'hf', 'hub'), { recursive: true }).filter((f) => String(f).endsWith('.part'));
    assert.equal(parts.length, 1, 'the partial download is kept');

    hub.slow = false;
    await app.click('[data-testid=download-default]');
    await app.find('[data-testid=workbench]', 120000);
    assert.ok(hub.ranges.at(-1) > 0, `the second download resumed (ranges asked: ${hub.ranges})`);
    await app.click('[data-testid=tab-settings]');
    assert.match(await app.text('[data-testid=model-card]'), /Qwen2\.5 Coder 0\.5B/);
    await app.waitUntil(`return document.querySelector('[data-testid=status-model]')?.textContent`, 'the model to load', 120000);
  } finally {
    await app.close();
    hub.server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
