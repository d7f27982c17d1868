// What the window spends showing a streaming reply: the built UI in Chromium, with a reasoning
// reply of 600 thinking and 400 answer tokens (Markdown, maths, a code block) streamed over the
// chat channel at a fixed rate, and the page's main-thread time (Chrome's TaskDuration) over the
// stream. A benchmark, not a test: `node scripts/stream-cost.mjs DIST [BASELINE_DIST]` runs both
// builds in turn, three times, and prints medians and the ratio.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { mockIpc, modelInfo as info, defaultSettings as settings } from '../tests/browser/harness.mjs';

const TOKENS_PER_SECOND = 30;

function serve(dist) {
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.woff2': 'font/woff2' };
  const server = http.createServer((req, res) => {
    let file = path.join(dist, decodeURIComponent(new URL(req.url, 'http://x').pathname));
    if (!fs.existsSync(file) || fs.statSync(file).isDirectory()) file = path.join(dist, 'index.html');
    res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** A reply shaped like R1's: a long thought, then an answer with a formula every few lines. */
function script() {
  const thinking = Array.from({ length: 600 }, (_, i) => (i % 40 === 39 ? 'so.\n\n' : ['Let ', 'x ', 'be ', 'the ', 'number; ', 'then ', '3x ', '= ', '12, '][i % 9]));
  const answer = [];
  for (let i = 0; answer.length < 400; i++) {
    answer.push(`**Step ${i + 1}.** `, 'We ', 'have ', '$3x ', '= ', '12$', ', so ', '$x = ', '\\frac{12}{3}', ' = 4$.', '\n\n');
    if (i % 5 === 4) answer.push('```python\n', 'print(', '12 / 3', ')\n', '```\n\n');
  }
  return [
    { event: 'started', prompt_tokens: 40 },
    ...thinking.map((text) => ({ event: 'delta', channel: 'thinking', text })),
    ...answer.slice(0, 400).map((text) => ({ event: 'delta', channel: 'answer', text })),
  ];
}

const mocks = {
  model_status: { state: 'ready', info },
  get_settings: settings,
  server_status: { state: 'off' },
  engine_status: { state: 'ready', model: info, stats: { running: 0, paused: 0, waiting: 0, kv_tokens_used: 0, kv_tokens_budget: 32768, tokens_per_second: 0, total_generated: 0 } },
  list_conversations: () => [],
  create_conversation: () => ({ id: 1, title: '', updated_at: 0 }),
  get_messages: () => [],
  send_message: ({ conversationId, content, onEvent }) => {
    const mk = (id, role) => ({ id, conversation_id: conversationId, role, content: role === 'user' ? content : '', thinking: '', finish_reason: role === 'user' ? 'stop' : null, stats: null });
    const events = window.__script;
    let i = 0;
    const interval = 1000 / window.__rate;
    const start = performance.now();
    const tick = () => {
      // Events due by now go out together, as a busy channel delivers them.
      while (i < events.length && i * interval <= performance.now() - start) window.__emit(onEvent, events[i++]);
      if (i < events.length) return setTimeout(tick, 5);
      window.__streamed = performance.now() - start;
    };
    setTimeout(tick, 0);
    return { question: mk(1, 'user'), reply: mk(2, 'assistant') };
  },
};

async function measure(browser, dist) {
  const server = await serve(dist);
  const page = await browser.newPage();
  await mockIpc(page, mocks);
  await page.addInitScript(([s, rate]) => { window.__script = s; window.__rate = rate; }, [script(), TOKENS_PER_SECOND]);
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  await page.getByTestId('composer').fill('Solve 3x = 12.');
  const task = async () => (await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'TaskDuration').value;
  const before = await task();
  await page.getByTestId('send').click();
  await page.waitForFunction(() => window.__streamed !== undefined, null, { timeout: 120_000 });
  const busy = (await task()) - before;
  const wall = (await page.evaluate(() => window.__streamed)) / 1000;
  await page.close();
  server.close();
  return { busy, wall, share: busy / wall };
}

const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const builds = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
const results = Object.fromEntries(builds.map((b) => [b, []]));
for (let run = 0; run < 3; run++) for (const b of builds) results[b].push(await measure(browser, b));
await browser.close();
for (const b of builds) {
  const share = median(results[b].map((r) => r.share));
  console.log(`${b}: main thread busy ${(100 * share).toFixed(1)}% of the stream (${median(results[b].map((r) => r.busy)).toFixed(2)} s over ${median(results[b].map((r) => r.wall)).toFixed(1)} s), runs ${results[b].map((r) => (100 * r.share).toFixed(1)).join(', ')}`);
}
if (builds.length === 2) {
  const [a, b] = builds.map((x) => median(results[x].map((r) => r.share)));
  console.log(`ratio ${builds[0]} / ${builds[1]}: ${(a / b).toFixed(2)}`);
}
