import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
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

test('a damaged chat history and a foreign job store are moved aside: the app starts and says so', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-e2e-'));
  // A chat.sqlite cut off mid-copy (garbage where the header should be), and a jobs.sqlite that
  // is another program's (a valid SQLite file with a table of its own).
  fs.writeFileSync(path.join(dataDir, 'chat.sqlite'), Buffer.alloc(8192, 0x5a));
  execFileSync('python3', ['-c', `import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)'); c.commit()`,
  path.join(dataDir, 'jobs.sqlite')]);
  const app = await launchApp({ PONDER_DATA_DIR: dataDir, PONDER_MODEL: '' });
  try {
    assert.equal(await app.text('[data-testid="first-run"] h1'), 'Welcome to Ponder');
    await app.waitUntil(`return document.querySelectorAll('[data-testid=launch-notice]').length === 2`, 'both notices');
    const notices = await app.run(`return [...document.querySelectorAll('[data-testid=launch-notice]')].map((n) => n.textContent)`);
    assert.match(notices[0], /chat\.sqlite could not be used \(not a readable chat history/);
    assert.match(notices[1], /jobs\.sqlite could not be used \(another program's database/);
    const kept = fs.readdirSync(dataDir).filter((f) => f.includes('.unusable-'));
    assert.equal(kept.filter((f) => /^(chat|jobs)\.sqlite\.unusable-\d{4}-\d\d-\d\dT\d{6}Z$/.test(f)).length, 2, kept.join(', '));
    assert.equal(fs.readFileSync(path.join(dataDir, kept.find((f) => f.startsWith('chat')))).length, 8192, 'the old file is kept whole');
    await app.click('[data-testid=dismiss-notice]');
    await app.waitUntil(`return document.querySelectorAll('[data-testid=launch-notice]').length === 1`, 'one dismissed');
  } finally {
    await app.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
