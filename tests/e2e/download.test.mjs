// First run, downloading the default model: the app's real hf-hub code against a stand-in for
// the Hugging Face hub on loopback (HF_ENDPOINT) that serves the 0.5B test model as the default
// file. Progress shows, Cancel stops it, starting again resumes from the partial file, and the
// app opens the workbench on the downloaded model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { launchApp } from './webdriver.mjs';

const models = process.env.PONDER_TEST_MODELS ?? path.join(os.homedir(), '.cache/ponder/test-models');
const small = path.join(models, 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf');
const REPO = 'unsloth/DeepSeek-R1-Distill-Qwen-1.5B-GGUF';
const FILE = 'DeepSeek-R1-Distill-Qwen-1.5B-Q4_K_M.gguf';

/// Serves FILE with Range support; `hub.slow` throttles it so the download can be watched.
function fakeHub() {
  const size = fs.statSync(small).size;
  const hub = { slow: true, ranges: [] };
  hub.server = http.createServer((req, res) => {
    if (req.url !== `/${REPO}/resolve/main/${FILE}`) { res.writeHead(404).end(); return; }
    const [, a, b] = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? 'bytes=0-') ?? [];
    const start = Number(a ?? 0);
    const end = b ? Number(b) : size - 1;
    hub.ranges.push(start);
    res.writeHead(206, { 'content-length': end - start + 1, 'content-range': `bytes ${start}-${end}/${size}`,
      etag: '"fake-etag-e2e"', 'x-repo-commit': '0123456789abcdef0123456789abcdef01234567', connection: 'close' });
    const stream = fs.createReadStream(small, { start, end, highWaterMark: 256 << 10 });
    stream.on('data', (chunk) => {
      if (!res.write(chunk) || hub.slow) {
        stream.pause();
        setTimeout(() => stream.resume(), hub.slow ? 40 : 0);
      }
    });
    stream.on('end', () => res.end());
    res.on('close', () => stream.destroy());
  });
  return new Promise((resolve) => hub.server.listen(0, '127.0.0.1', () => resolve(hub)));
}

test('first run: the default model downloads with progress, cancels, resumes and opens', async () => {
  assert.ok(fs.existsSync(small), `test model ${small} is missing: run scripts/fetch-test-models.sh`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-e2e-download-'));
  const hub = await fakeHub();
  const app = await launchApp({
    PONDER_DATA_DIR: path.join(dir, 'data'),
    HF_HOME: path.join(dir, 'hf'),
    HF_ENDPOINT: `http://127.0.0.1:${hub.server.address().port}`,
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
