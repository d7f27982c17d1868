// End-to-end harness: the real release app under Xvfb, driven through tauri-driver and
// WebKitWebDriver with plain WebDriver HTTP calls (no client library needed).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(root, 'target');
export const appBinary = path.join(targetDir, 'release', 'ponder-app');
/// A cargo example of the workspace, built by `make build`.
export function exampleBinary(name) {
  const p = path.join(targetDir, 'release', 'examples', name);
  if (!fs.existsSync(p)) throw new Error(`${p} is missing: run "make build" first`);
  return p;
}
export const shotsDir = path.join(root, 'test-output', 'e2e');

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

async function waitFor(fn, what, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    try { const v = await fn(); if (v) return v; } catch (e) { last = e; }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

function tauriDriverPath() {
  const p = path.join(os.homedir(), '.cargo', 'bin', 'tauri-driver');
  if (!fs.existsSync(p)) throw new Error('tauri-driver is missing: run scripts/setup.sh');
  return p;
}

/// Starts Xvfb, tauri-driver and a session of the app with the given environment (a variable
/// set to `undefined` is removed). `application` is the build's binary unless given (the
/// package test runs the installed one).
export async function launchApp(env = {}, { application = appBinary } = {}) {
  if (!fs.existsSync(application)) throw new Error(`${application} is missing: run "make build" first`);
  const procs = [];
  const display = `:${100 + Math.floor(Math.random() * 800)}`;
  const xvfb = spawn('Xvfb', [display, '-screen', '0', '1280x800x24', '-nolisten', 'tcp'], { stdio: 'ignore' });
  procs.push(xvfb);
  await waitFor(() => fs.existsSync(`/tmp/.X11-unix/X${display.slice(1)}`), 'Xvfb');
  const port = await freePort();
  const nativePort = await freePort();
  const driver = spawn(tauriDriverPath(), ['--port', String(port), '--native-port', String(nativePort),
    '--native-driver', '/usr/bin/WebKitWebDriver'], {
    env: { ...process.env, DISPLAY: display, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  procs.push(driver);
  let driverLog = '';
  driver.stderr.on('data', (d) => { driverLog += d; });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${base}/status`)).ok, 'tauri-driver');
  const created = await call(base, 'POST', '/session', {
    capabilities: { alwaysMatch: { 'tauri:options': { application } } },
  });
  const session = new Session(base, created.sessionId);
  session.display = display;
  session.close = async () => {
    try { await call(base, 'DELETE', `/session/${session.id}`); } catch { /* already gone */ }
    driver.kill('SIGTERM');
    // tauri-driver leaves WebKitWebDriver on its native port: end it by that port's owner.
    try { execFileSync('fuser', ['-k', '-TERM', `${nativePort}/tcp`], { stdio: 'ignore' }); } catch { /* none left */ }
    xvfb.kill('SIGTERM');
  };
  session.driverLog = () => driverLog;
  return session;
}

async function call(base, method, url, body) {
  const res = await fetch(base + url, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok || json.value?.error) {
    throw new Error(`${method} ${url}: ${json.value?.error ?? res.status} ${json.value?.message ?? ''}`);
  }
  return json.value;
}

class Session {
  constructor(base, id) { this.base = base; this.id = id; }
  cmd(method, url, body) { return call(this.base, method, `/session/${this.id}${url}`, body); }

  async find(css, timeoutMs = 30000) {
    const el = await waitFor(async () => {
      const found = await this.cmd('POST', '/elements', { using: 'css selector', value: css });
      return found.length ? found[0] : null;
    }, `element ${css}`, timeoutMs);
    return Object.values(el)[0];
  }
  /// Waits until an element matches `css`, watching from inside the page rather than asking
  /// every 200 ms as `find` does: each question runs a script in the window's process, and a
  /// benchmark of what the window costs must not add that.
  async waitQuietly(css, timeoutMs = 30000) {
    const end = Date.now() + timeoutMs;
    // One script waits up to 50 s: fetch gives up on an answer that takes 300 s.
    await this.cmd('POST', '/timeouts', { script: 60000 });
    while (Date.now() < end) {
      const found = await this.cmd('POST', '/execute/async', {
        script: `const [css, ms, done] = arguments;
          if (document.querySelector(css)) return done(true);
          const seen = new MutationObserver(() => { if (document.querySelector(css)) finish(true); });
          const timer = setTimeout(() => finish(false), ms);
          function finish(v) { seen.disconnect(); clearTimeout(timer); done(v); }
          seen.observe(document.body, { childList: true, subtree: true });`,
        args: [css, Math.max(0, Math.min(50000, end - Date.now()))],
      });
      if (found) return;
    }
    throw new Error(`timed out waiting for element ${css}`);
  }
  /// The element's text content. (WebDriver's rendered-text command can answer '' for an
  /// element WebKit has not painted yet.)
  async text(css, timeoutMs) {
    await this.find(css, timeoutMs);
    return this.run(`return document.querySelector(${JSON.stringify(css)}).textContent.trim()`);
  }
  async click(css) {
    const id = await this.find(css);
    return this.cmd('POST', `/element/${id}/click`, {});
  }
  async type(css, text) {
    const id = await this.find(css);
    return this.cmd('POST', `/element/${id}/value`, { text });
  }
  /// Runs `script` (a function body; `arguments` holds `args`) in the page.
  run(script, args = []) {
    return this.cmd('POST', '/execute/sync', { script, args });
  }
  /// Waits until `script` returns something truthy in the page; returns it.
  waitUntil(script, what, timeoutMs = 30000) {
    return waitFor(() => this.run(script), what, timeoutMs);
  }
  /// Answers the app's native file dialog titled `title` the way a user does: Ctrl+L for GTK's
  /// location field, the path, Enter. Driven with xdotool on the test's X display; a busy machine
  /// can drop keys while the dialog is still settling, so it tries again until the dialog closes.
  async chooseInDialog(title, file) {
    const env = { ...process.env, DISPLAY: this.display };
    const xdo = (...args) => { try { return execFileSync('xdotool', args, { env, stdio: ['ignore', 'pipe', 'ignore'] }).toString(); } catch { return null; } };
    const visible = () => xdo('search', '--onlyvisible', '--name', `^${title}$`)?.trim().split('\n')[0] || null;
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const win = await waitFor(visible, `the "${title}" dialog`);
    for (let attempt = 0; attempt < 4; attempt++) {
      xdo('windowfocus', '--sync', win);
      await sleep(800);
      xdo('key', 'ctrl+l');
      await sleep(300);
      xdo('key', 'ctrl+a');
      xdo('type', '--delay', '40', file);
      await sleep(500);
      xdo('key', 'Return');
      // GTK may take the first Enter to accept its completion of the typed path.
      for (let i = 0; i < 5 && visible(); i++) {
        await sleep(600);
        if (visible()) xdo('key', 'Return');
      }
      if (!visible()) return;
    }
    throw new Error(`the "${title}" dialog did not take ${file}`);
  }
  /// Answers GTK's print dialog the way a user prints to a PDF: the "Print to File" printer (the
  /// only one on a machine without CUPS), then Print (Alt+P). The file is `output.pdf` in the
  /// app's working folder where the home folder has no Documents folder; returns once it is
  /// written and the dialog has gone. `shot` names a screenshot of the dialog, if given.
  async printToFile(pdf, shot) {
    const env = { ...process.env, DISPLAY: this.display };
    const xdo = (...args) => { try { return execFileSync('xdotool', args, { env, stdio: ['ignore', 'pipe', 'ignore'] }).toString(); } catch { return null; } };
    const visible = () => xdo('search', '--onlyvisible', '--name', '^Print$')?.trim().split('\n')[0] || null;
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const win = await waitFor(visible, 'the print dialog');
    for (let attempt = 0; attempt < 4 && visible(); attempt++) {
      xdo('windowfocus', '--sync', win);
      await sleep(600);
      // The first row of the printer list, under its header (GTK 3's layout).
      xdo('mousemove', '--window', win, '82', '86');
      xdo('click', '1');
      await sleep(800);
      if (shot && attempt === 0) fs.writeFileSync(path.join(shotsDir, `${shot}.png`), execFileSync('import', ['-window', 'root', 'png:-'], { env, maxBuffer: 64 << 20 }));
      xdo('key', 'alt+p');
      for (let i = 0; i < 5 && visible(); i++) await sleep(500);
    }
    await waitFor(() => !visible() && fs.existsSync(pdf) && fs.statSync(pdf).size > 0, `${pdf} to be printed`);
  }
  /// Saves a screenshot of the app's window as the X display shows it. WebKitWebDriver's own
  /// screenshot asks the web view for a snapshot, which never came back from a window painted
  /// without compositing (`PONDER_PAINTING=direct`); the display is what a user sees either
  /// way. A picture can predate the last DOM change, so it is retaken (for up to 10 s) until
  /// `settled(bytes)` accepts it.
  async screenshot(name, settled = () => true) {
    fs.mkdirSync(shotsDir, { recursive: true });
    const file = path.join(shotsDir, `${name}.png`);
    const end = Date.now() + 10000;
    let png;
    do {
      png = this.grabWindow();
      if (settled(png)) break;
      await new Promise((r) => setTimeout(r, 300));
    } while (Date.now() < end);
    fs.writeFileSync(file, png);
    return file;
  }

  /// The app's window from the X display, as PNG bytes (xdotool finds it, ImageMagick's
  /// `import` reads it).
  grabWindow() {
    const env = { ...process.env, DISPLAY: this.display };
    const found = execFileSync('xdotool', ['search', '--onlyvisible', '--class', 'ponder'], { env }).toString();
    const id = found.trim().split('\n').pop();
    return execFileSync('import', ['-window', id, 'png:-'], { env, maxBuffer: 64 << 20 });
  }
}
