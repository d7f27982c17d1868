// The app's chat against the engine alone, in the real window: does a reply stream as fast as
// `ponder bench` decodes, and what does the window's web process spend showing it? A benchmark,
// not a test (`make bench-app`, part of `make bench`): it prints medians and ratios, and says
// whether the targets hold (chat ≥ 0.9 × the engine's single-stream rate; the web process
// < 15 % of a core while a reply of about 1,000 tokens streams).
//
// Both sides run the 1.5B test model with 2 threads, in turns: before each reply in the app,
// `ponder bench` decodes a single stream of as many tokens as the reply has, so that each
// reply is compared with the engine's rate of the same minutes (this machine's speed drifts by
// a fifth within a quarter of an hour). The app stays open, idle, while the bench runs. Each
// reply answers the same question in a new chat (greedy, so the same tokens), with the model
// carrying R1's template: it thinks, then answers as Markdown.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exampleBinary, launchApp, root } from './webdriver.mjs';

const TOKENS = 1000;
const RUNS = 3;
const models = process.env.PONDER_TEST_MODELS ?? path.join(os.homedir(), '.cache/ponder/test-models');
const large = path.join(models, 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf');
const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(root, 'target');
const ponder = path.join(targetDir, 'release', 'ponder');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** CPU seconds used so far by every process whose name is `name` (as /proc shows it). */
function cpuSeconds(name) {
  let ticks = 0;
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== name) continue;
      // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return ticks / ticksPerSecond;
}

/** The engine's single-stream decode rate over TOKENS tokens, from one `ponder bench` run. */
function engineRate() {
  const bench = JSON.parse(execFileSync(ponder, ['--threads', '2', '--model', large, 'bench', '--json', '--batch', '1',
    '--memory-context', '0', '--depths', '0', '--speculative-tokens', '0', '--decode-tokens', String(TOKENS), '--runs', '1'],
  { stdio: ['ignore', 'pipe', 'ignore'] }).toString());
  return bench.single_decode_tok_s;
}

// 2. The same model in the app.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ponder-stream-speed-'));
const r1 = path.join(dataDir, 'r1-1.5b.gguf');
execFileSync(exampleBinary('r1_test_model'), [large, r1]);
fs.writeFileSync(path.join(dataDir, 'settings.json'), JSON.stringify({
  threads: 2, max_sequences: 2, context_size: 4096, temperature: 0, thinking_budget: 400, max_tokens: TOKENS,
  // Plain decoding, as `ponder bench`'s single stream: the ratio compares the window, not the drafts.
  speculative_decoding: false,
}));
const app = await launchApp({ PONDER_DATA_DIR: dataDir, PONDER_MODEL: r1 });
const replies = [];
try {
  await app.find('[data-testid=workbench]');
  await app.waitUntil(`return document.querySelector('[data-testid=status-model]')?.textContent`, 'the model to load', 300000);
  for (let run = 0; run < RUNS; run++) {
    const engine = engineRate();
    await app.click('[data-testid=new-chat]');
    await app.type('[data-testid=composer]', 'Write the numbers from 2 to 401 as a Markdown list, each with its square in LaTeX, like $3^2 = 9$.');
    const [cpu0, t0] = [cpuSeconds('WebKitWebProces'), Date.now()];
    await app.click('[data-testid=send]');
    await app.waitQuietly('[data-testid=stats]', 600000);
    const [cpu1, t1] = [cpuSeconds('WebKitWebProces'), Date.now()];
    const stats = await app.text('[data-testid=stats]');
    const m = /(\d+\.\d) tok\/s · (\d+) thinking \+ (\d+) answer tokens/.exec(stats);
    if (!m) throw new Error(`no figures under the reply: ${stats}`);
    const reply = { engine_tok_s: engine, tok_s: Number(m[1]), chat_to_engine: Number(m[1]) / engine,
      tokens: Number(m[2]) + Number(m[3]), web_core_share: (cpu1 - cpu0) / ((t1 - t0) / 1000) };
    console.error(`stream-speed: run ${run + 1}: ${JSON.stringify(reply)}`);
    replies.push(reply);
  }
  await app.screenshot('stream-speed', (png) => png.length > 20_000);
} finally {
  await app.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

const engineMedian = median(replies.map((r) => r.engine_tok_s));
const chatRate = median(replies.map((r) => r.tok_s));
const webShare = median(replies.map((r) => r.web_core_share));
// The median of each reply's ratio to the bench run just before it.
const ratio = median(replies.map((r) => r.chat_to_engine));
const report = {
  engine_single_stream_tok_s: engineMedian, chat_tok_s: chatRate, chat_to_engine: ratio,
  web_process_core_share: webShare, reply_tokens: replies.map((r) => r.tokens),
  targets: { chat_to_engine: ratio >= 0.9, web_process_core_share: webShare < 0.15 },
};
console.log(JSON.stringify(report));
console.error(`stream-speed: chat ${chatRate.toFixed(1)} tok/s against the engine's ${engineMedian.toFixed(1)} (median ratio ${ratio.toFixed(2)}x, target >= 0.90); `
  + `the web process used ${(webShare * 100).toFixed(1)} % of a core (target < 15 %)`);
