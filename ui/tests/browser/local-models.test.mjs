// The Models list in Settings: what was found where, which Ponder runs and why not, using one,
// and the user's folders (the IPC mocked; the real search is tested in Rust and end to end).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, mockIpc, defaultSettings, modelInfo } from './harness.mjs';

const ctx = useBrowser();

const info = (name, architecture, quantization, context_length) =>
  ({ ...modelInfo, name, architecture, quantization, context_length, path: `/x/${name}.gguf` });
const found = [
  { path: '/hf/models--Qwen--Q/snapshots/r/q.gguf', source: 'hugging_face', origin: 'Qwen/Qwen2.5-0.5B-Instruct-GGUF', file_size: 491400032,
    info: info('Qwen2.5 0.5B', 'qwen2', 'Q4K', 32768), problem: null, current: true },
  { path: '/lms/pub/repo/Qwen3-4B-Q4_K_M.gguf', source: 'lm_studio', origin: 'lmstudio-community/Qwen3-4B-GGUF', file_size: 2.5e9,
    info: info('Qwen3 4B', 'qwen3', 'Q4K', 40960), problem: null, current: false },
  { path: '/ollama/blobs/sha256-01', source: 'ollama', origin: 'gemma3:1b', file_size: 8.15e8, info: null, current: false,
    problem: { code: 'model.unsupported_architecture', params: { path: '/ollama/blobs/sha256-01', found: 'gemma3' }, message: 'x' } },
  { path: '/home/u/models/tiny.gguf', source: 'folder', origin: '/home/u/models', file_size: 1e8,
    info: info('Tiny', 'llama', 'F16', 2048), problem: null, current: false },
];

test('Settings lists the models on this computer, says which run, and switches to one', async () => {
  const page = await ctx.browser.newPage();
  await mockIpc(page, {
    get_settings: { ...defaultSettings, model_folders: ['/home/u/models'] },
    model_status: { state: 'ready', info: modelInfo },
    // Once a model is chosen, it is partway through loading.
    engine_status: () => (window.__used
      ? { state: 'loading', path: window.__used, progress: { done_bytes: 1.025e9, total_bytes: 2.5e9 } }
      : { state: 'ready', model: { name: 'Qwen2.5 0.5B', path: '/hf/q.gguf', architecture: 'qwen2', quantization: 'Q4K', file_size: 4.9e8,
        context_length: 32768, parameters: 5e8, reasoning: false, thinking: 'never', kernel: 'avx512' },
      stats: { running: 0, paused: 0, waiting: 0, kv_tokens_used: 0, kv_tokens_budget: 8192, tokens_per_second: 0 } }),
    list_conversations: [],
    model_catalog: [],
    server_status: { state: 'off' },
    remote_key_stored: false,
    local_models: found,
    // Serialised into the page: self-contained.
    use_local_model: ({ path }) => {
      window.__used = path;
      return { state: 'ready', info: { name: 'Qwen3 4B', path, architecture: 'qwen3', quantization: 'Q4K', file_size: 2.5e9,
        context_length: 40960, parameters: 4e9, reasoning: true, thinking: 'switchable', kernel: 'avx512' } };
    },
    remove_model_folder: ({ path }) => { window.__removed = path; return []; },
  });
  await page.goto(ctx.server.url);
  await page.getByTestId('tab-settings').click();
  const rows = page.getByTestId('local-model');
  await rows.first().waitFor();
  assert.deepEqual(await rows.evaluateAll((els) => els.map((e) => [e.dataset.source, e.dataset.runs])),
    [['hugging_face', 'yes'], ['lm_studio', 'yes'], ['ollama', 'no'], ['folder', 'yes']]);
  assert.match(await rows.nth(0).textContent(), /Qwen2\.5 0\.5B.*Hugging Face cache · Qwen\/Qwen2\.5-0\.5B-Instruct-GGUF.*qwen2 · Q4K · 0\.49 GB · 32,768 tokens.*In use/s);
  assert.match(await rows.nth(2).textContent(), /sha256-01.*Ollama · gemma3:1b.*unsupported model architecture “gemma3”/s);
  assert.equal(await rows.nth(2).getByTestId('local-model-use').count(), 0, 'no Use button for a model Ponder cannot run');
  assert.match(await rows.nth(3).textContent(), /Your folder · \/home\/u\/models.*llama · F16/s);

  await rows.nth(1).getByTestId('local-model-use').click();
  await page.waitForFunction(() => window.__used);
  assert.equal(await page.evaluate(() => window.__used), '/lms/pub/repo/Qwen3-4B-Q4_K_M.gguf');
  await page.getByTestId('model-name').filter({ hasText: 'Qwen3 4B' }).waitFor();
  // The status bar follows the load at once, with how far the weights have got.
  await page.getByTestId('status-load-progress').waitFor();
  assert.equal(await page.getByTestId('status-loading').textContent(), 'Loading Qwen3-4B-Q4_K_M.gguf…');
  assert.equal(await page.getByTestId('status-load-progress').textContent(), 'weights read and packed: 41 % (1.02 GB of 2.50 GB)');
  assert.deepEqual(await page.getByTestId('status-load-bar').evaluate((e) => [e.value, e.max]), [1.025e9, 2.5e9]);

  assert.equal(await page.getByTestId('model-folder').textContent().then((s) => s.includes('/home/u/models')), true);
  await page.getByTestId('model-folder-remove').click();
  await page.waitForFunction(() => window.__removed);
  assert.equal(await page.getByTestId('model-folder').count(), 0);
  await page.close();
});
