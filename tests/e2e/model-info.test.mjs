import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchApp } from './webdriver.mjs';

const models = process.env.PONDER_TEST_MODELS ?? path.join(os.homedir(), '.cache/ponder/test-models');
const small = path.join(models, 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf');

// With the kernels forced to AVX2's, as on a CPU without AVX-512: the card says so.
test('with a model the real window shows what the GGUF holds and which kernels run it', async () => {
  assert.ok(fs.existsSync(small), `test model ${small} is missing: run scripts/fetch-test-models.sh`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-e2e-'));
  const app = await launchApp({ PONDER_DATA_DIR: dataDir, PONDER_MODEL: small, PONDER_CPU_KERNEL: 'avx2' });
  try {
    await app.click('[data-testid="tab-settings"]');
    const card = await app.text('[data-testid="model-card"]');
    assert.match(card, /qwen2/);
    assert.match(card, /32,768 tokens/);
    assert.match(card, /0\.49 GB/);
    assert.match(card, /parameters/);
    assert.match(card, /Kernels\s*AVX2/);
    await app.screenshot('model-info', (png) => png.length > 10_000);
  } finally {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a file that is not a model is explained on the first-run screen', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-e2e-'));
  const bogus = path.join(dataDir, 'notes.gguf');
  fs.writeFileSync(bogus, 'not a model');
  const app = await launchApp({ PONDER_DATA_DIR: dataDir, PONDER_MODEL: bogus });
  try {
    const problem = await app.text('[data-testid="model-problem"]');
    assert.match(problem, /notes\.gguf: not a GGUF file/);
  } finally {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
