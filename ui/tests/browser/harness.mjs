// Shared pieces of the browser tests: a static server for ui/dist, Chromium, and an IPC mock.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { before, after } from 'node:test';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.woff2': 'font/woff2', '.png': 'image/png' };

export async function startPreview() {
  if (!fs.existsSync(path.join(dist, 'index.html'))) {
    throw new Error(`ui/dist is missing: run "npm run build" in ui/ first`);
  }
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    let file = path.join(dist, decodeURIComponent(url.pathname));
    if (!file.startsWith(dist) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
      file = path.join(dist, 'index.html');
    }
    res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

export function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/// Answers `invoke(cmd)` from a table: a value, or a function of the arguments (serialised
/// into the page, so it must be self-contained).
export async function mockIpc(page, handlers) {
  const table = Object.fromEntries(Object.entries(handlers).map(([k, v]) =>
    [k, typeof v === 'function' ? { fn: v.toString() } : { value: v }]));
  await page.addInitScript((table) => {
    window.__TAURI_INTERNALS__ = {
      metadata: { currentWindow: { label: 'main' }, currentWebview: { label: 'main' } },
      transformCallback: (cb) => { const id = Math.floor(Math.random() * 1e9); window['_' + id] = cb; return id; },
      unregisterCallback: (id) => { delete window['_' + id]; },
      invoke: async (cmd, args) => {
        // Event listeners (drag and drop among them) are recorded so tests can fire events.
        if (cmd === 'plugin:event|listen') {
          (window.__listeners[args.event] ??= []).push(args.handler);
          return args.handler;
        }
        if (cmd === 'plugin:event|unlisten') return null;
        const h = table[cmd];
        if (!h) throw new Error(`unmocked command ${cmd}`);
        return h.fn ? (0, eval)(`(${h.fn})`)(args) : h.value;
      },
    };
    window.__listeners = {};
    /// Fires a Tauri event (e.g. 'tauri://drag-drop') at the page's listeners.
    window.__tauriEvent = (event, payload) => {
      for (const h of window.__listeners[event] ?? []) window['_' + h]?.({ event, id: h, payload });
    };
    // Sends `message` on a Tauri channel passed to a mocked command, as Rust's Channel::send does.
    const next = {};
    window.__emit = (channel, message) => {
      const index = (next[channel.id] ??= 0);
      next[channel.id] += 1;
      window['_' + channel.id]?.({ index, message });
    };
  }, table);
}

/// Starts the preview server and Chromium before a file's tests and stops them after.
export function useBrowser() {
  const ctx = {};
  before(async () => {
    ctx.server = await startPreview();
    ctx.browser = await launchBrowser();
  });
  after(async () => {
    await ctx.browser?.close();
    ctx.server?.close();
  });
  return ctx;
}

/// What a loaded model and the default settings look like to the UI.
export const modelInfo = { name: 'Tiny R1', path: '/m/x.gguf', architecture: 'qwen2', quantization: 'Q4K', file_size: 1e9,
  context_length: 4096, parameters: 1.5e9, reasoning: true, thinking: 'always', kernel: 'avx512' };
export const defaultSettings = { model_path: null, model_folders: [], threads: 2, max_sequences: 8, context_size: 4096, kv_cache: 'f16', speculative_decoding: true, draft_model_path: null, temperature: 0.6, top_p: 0.95,
  max_tokens: 512, thinking_budget: null, server_enabled: false, server_port: 8080, server_api_key: null, remote_url: null, remote_model: null,
  language: 'en', theme: 'light' };
