// Browser tests: the built UI in Debian's Chromium (playwright-core), with the Tauri IPC mocked
// at the window.__TAURI_INTERNALS__ seam the real app uses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, mockIpc, defaultSettings as settings } from './harness.mjs';

const ctx = useBrowser();
const base = {
  get_settings: settings,
  engine_status: { state: 'loading', path: '/models/x.gguf' },
  list_conversations: [],
};

test('first run: without a model the app offers the download and a local file', async () => {
  const page = await ctx.browser.newPage();
  await mockIpc(page, { ...base, model_status: { state: 'missing', default_model: 'Default R1 1.5B' } });
  await page.goto(ctx.server.url);
  await page.getByTestId('first-run').waitFor();
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Welcome to Ponder');
  assert.match(await page.getByTestId('download-default').textContent(), /Default R1 1\.5B/);
  assert.ok(await page.getByTestId('open-local').isVisible());
  await page.close();
});

test('first run: the other models are listed, and one downloads with progress', async () => {
  const page = await ctx.browser.newPage();
  const model = (id, display_name, approx_bytes, family, thinking) => ({ id, display_name, repo: `unsloth/${display_name}-GGUF`,
    file: `${display_name}-Q4_K_M.gguf`, approx_bytes, min_ram_gb: 4, family, thinking, good_for: 'x' });
  await mockIpc(page, { ...base, model_status: { state: 'missing', default_model: 'Default R1 1.5B' },
    model_catalog: [
      { model: model('deepseek-r1-distill-qwen-1.5b', 'DeepSeek-R1-Distill-Qwen-1.5B', 1.12e9, 'qwen2', 'always'), label: 'DeepSeek-R1-Distill-Qwen-1.5B (Q4_K_M, 1.1 GB)', downloaded: null, current: false },
      { model: model('qwen3-1.7b', 'Qwen3-1.7B', 1.11e9, 'qwen3', 'switchable'), label: 'Qwen3-1.7B (Q4_K_M, 1.1 GB)', downloaded: null, current: false },
    ],
    cancel_download: null,
    download_model: ({ id, onEvent }) => {
      window.__downloading = id;
      window.__emit(onEvent, { event: 'started', total_bytes: 1.11e9 });
      window.__emit(onEvent, { event: 'progress', downloaded_bytes: 2.5e8, total_bytes: 1.11e9, bytes_per_second: 5e7 });
      return new Promise(() => {});
    } });
  await page.goto(ctx.server.url);
  await page.getByTestId('other-models').locator('summary').click();
  const rows = page.getByTestId('catalog-model');
  assert.equal(await rows.count(), 1, 'the default has its own button');
  assert.match(await rows.first().textContent(), /Qwen3-1\.7B \(Q4_K_M, 1\.1 GB\).*qwen3 · thinks first unless turned off · needs 4 GB of memory/s);
  await page.getByTestId('catalog-action').click();
  await page.getByTestId('download-progress').waitFor();
  assert.equal(await page.evaluate(() => window.__downloading), 'qwen3-1.7b');
  assert.match(await page.getByTestId('download-progress').textContent(), /Downloading Qwen3-1\.7B \(Q4_K_M, 1\.1 GB\).*250 MB of 1\.11 GB · 50 MB\/s · 17 s left/s);
  await page.close();
});

test('with a model the app opens the workbench', async () => {
  const page = await ctx.browser.newPage();
  await mockIpc(page, { ...base, model_status: { state: 'ready', info: {
    name: 'Tiny R1', path: '/models/x.gguf', architecture: 'qwen2', quantization: 'Q4K',
    file_size: 1117320768, context_length: 131072, parameters: 1777088000, reasoning: true, thinking: 'always', kernel: 'avx2' } } });
  await page.goto(ctx.server.url);
  await page.getByTestId('workbench').waitFor();
  await page.getByTestId('tab-settings').click();
  const card = await page.getByTestId('model-card').textContent();
  assert.match(card, /Tiny R1/);
  assert.match(card, /qwen2 · always thinks first/);
  assert.match(card, /Q4K · 1\.8B parameters/);
  assert.match(card, /1\.12 GB/);
  assert.match(card, /131,072 tokens/);
  assert.match(card, /Kernels\s*AVX2/);
  await page.close();
});

test('a broken configured model shows why, on the first-run screen', async () => {
  const page = await ctx.browser.newPage();
  await mockIpc(page, { ...base, model_status: { state: 'invalid', path: '/m/bad.gguf', error: { code: 'model.not_gguf', params: { path: '/m/bad.gguf' }, message: '/m/bad.gguf is not a GGUF file' }, default_model: 'D' } });
  await page.goto(ctx.server.url);
  await page.getByTestId('first-run').waitFor();
  assert.equal(await page.getByTestId('model-problem').textContent(), '/m/bad.gguf: not a GGUF file (it does not start with the GGUF magic bytes)');
  await page.close();
});
