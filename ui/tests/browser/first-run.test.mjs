// Browser tests: the built UI in Debian's Chromium (playwright-core), with the Tauri IPC mocked
// at the window.__TAURI_INTERNALS__ seam the real app uses.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startPreview, launchBrowser, mockIpc } from './harness.mjs';

let server, browser;
before(async () => {
  server = await startPreview();
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  server?.close();
});

test('first run: without a model the app offers the download and a local file', async () => {
  const page = await browser.newPage();
  await mockIpc(page, { model_status: { state: 'missing', default_model: 'Default R1 1.5B' } });
  await page.goto(server.url);
  await page.getByTestId('first-run').waitFor();
  assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Welcome to Ponder');
  assert.match(await page.getByTestId('download-default').textContent(), /Default R1 1\.5B/);
  assert.ok(await page.getByTestId('open-local').isVisible());
  await page.close();
});

test('with a model the app opens the workbench', async () => {
  const page = await browser.newPage();
  await mockIpc(page, { model_status: { state: 'ready', path: '/models/x.gguf' } });
  await page.goto(server.url);
  await page.getByTestId('workbench').waitFor();
  assert.match(await page.getByTestId('workbench').textContent(), /x\.gguf/);
  await page.close();
});
