import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchApp } from './webdriver.mjs';

test('a new user without a model sees the first-run screen in the real window', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-e2e-'));
  const app = await launchApp({ PONDER_DATA_DIR: dataDir, PONDER_MODEL: '' });
  try {
    const heading = await app.text('[data-testid="first-run"] h1');
    assert.equal(heading, 'Welcome to Ponder');
    assert.match(await app.text('[data-testid="download-default"]'), /DeepSeek-R1-Distill-Qwen-1\.5B/);
    assert.match(await app.text('[data-testid="open-local"]'), /local GGUF/);
    // The painted first-run screen (heading, text, two buttons) is far busier than the blank
    // loading frame, which compresses to a few kilobytes.
    const shot = await app.screenshot('first-run', (png) => png.length > 10_000);
    assert.ok(fs.statSync(shot).size > 10_000, `screenshot ${shot} shows the rendered screen`);
  } finally {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
