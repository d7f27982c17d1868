// Browser test of a chat exchange: the built UI in Chromium with the Rust side mocked, replies
// streamed over the same channel protocol Tauri uses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, mockIpc, modelInfo as info, defaultSettings as settings } from './harness.mjs';

const ctx = useBrowser();

// A small in-page stand-in for the Rust chat commands.
const chatMocks = {
  model_status: { state: 'ready', info },
  get_settings: settings,
  server_status: { state: 'off' },
  engine_status: { state: 'ready', model: info, stats: { running: 0, paused: 0, waiting: 0, kv_tokens_used: 0,
    kv_tokens_budget: 32768, tokens_per_second: 0, total_generated: 0 } },
  list_conversations: () => (window.__db ??= { convs: [], msgs: [], next: 1 }).convs.slice().reverse(),
  create_conversation: () => {
    const db = (window.__db ??= { convs: [], msgs: [], next: 1 });
    const c = { id: db.next++, title: '', updated_at: 0 };
    db.convs.push(c);
    return c;
  },
  rename_conversation: ({ id, title }) => { window.__db.convs.find((c) => c.id === id).title = title; },
  delete_conversation: ({ id }) => { window.__db.convs = window.__db.convs.filter((c) => c.id !== id); },
  get_messages: ({ conversationId }) => window.__db.msgs.filter((m) => m.conversation_id === conversationId),
  stop_reply: ({ conversationId }) => { (window.__stops ??= []).push(conversationId); },
  send_message: ({ conversationId, content, onEvent }) => {
    const db = window.__db;
    const conv = db.convs.find((c) => c.id === conversationId);
    if (!conv.title) conv.title = content;
    const mk = (role, text) => ({ id: db.next++, conversation_id: conversationId, role, content: text, thinking: '',
      finish_reason: role === 'user' ? 'stop' : null, stats: null });
    const question = mk('user', content);
    const reply = mk('assistant', '');
    db.msgs.push(question, reply);
    const script = [
      { event: 'started', prompt_tokens: 12 },
      ...(window.__thought ?? ['The user ', 'asks for ', '2 + 2. ', 'Adding gives 4.']).map((text) => ({ event: 'delta', channel: 'thinking', text })),
      ...['**Answer:** ', '$2 + 2 = 4$', '\n\n<img src=x onerror="window.pwned=1">'].map((text) => ({ event: 'delta', channel: 'answer', text })),
    ];
    let i = 0;
    const tick = () => {
      if (window.__hold && i === (window.__holdAt ?? 5)) return setTimeout(tick, 30);
      if (i < script.length) {
        window.__emit(onEvent, script[i++]);
        return setTimeout(tick, 30);
      }
      const done = { ...reply, content: '**Answer:** $2 + 2 = 4$\n\n<img src=x onerror="window.pwned=1">', thinking: 'The user asks for 2 + 2. Adding gives 4.',
        finish_reason: 'stop', stats: { time_to_first_token_s: 0.2, tokens_per_second: 20, thinking_tokens: 4, answer_tokens: 3, thinking_seconds: 0.1 } };
      Object.assign(reply, done);
      window.__emit(onEvent, { event: 'finished', message: done, error: null });
    };
    setTimeout(tick, 30);
    return { question, reply };
  },
};

test('chat: a question streams thinking then a rendered, sanitised answer', async () => {
  const page = await ctx.browser.newPage();
  await mockIpc(page, chatMocks);
  await page.addInitScript(() => { window.__hold = true; });
  await page.goto(ctx.server.url);
  await page.getByTestId('workbench').waitFor();
  await page.getByTestId('empty-thread').waitFor();
  assert.equal(await page.getByTestId('send').isDisabled(), true);

  await page.getByTestId('composer').fill('What is 2 + 2?');
  await page.getByTestId('composer').press('Enter');
  assert.equal(await page.getByTestId('question').textContent(), 'What is 2 + 2?');

  // Held mid-thought: the thinking block is open and live, with a Stop button.
  const thinking = page.getByTestId('thinking');
  await page.waitForFunction(() => document.querySelector('[data-testid=thinking-text]')?.textContent === 'The user asks for 2 + 2. Adding gives 4.');
  assert.equal(await thinking.getAttribute('data-state'), 'thinking');
  assert.equal(await thinking.evaluate((d) => d.open), true);
  assert.match(await page.getByTestId('thinking-meta').textContent(), /^4 tokens · \d+\.\d s$/);
  assert.ok(await page.getByTestId('composer-stop').isVisible());

  await page.evaluate(() => { window.__hold = false; });
  await page.getByTestId('stats').waitFor();
  assert.equal(await thinking.getAttribute('data-state'), 'done');
  assert.equal(await thinking.evaluate((d) => d.open), false, 'the thought folds away when the answer starts');
  const answer = page.getByTestId('answer');
  assert.equal(await answer.locator('strong').textContent(), 'Answer:');
  assert.equal(await answer.locator('.katex').count(), 1);
  assert.equal(await answer.locator('[onerror]').count(), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  assert.match(await page.getByTestId('stats').textContent(), /First token 0\.20 s · 20\.0 tok\/s · 4 thinking \+ 3 answer tokens/);
  assert.ok(await page.getByTestId('send').isVisible());

  // The conversation is listed under its first question, and opens again from the sidebar.
  await page.getByTestId('conversation').first().waitFor();
  assert.equal(await page.getByTestId('conversation').first().textContent().then((s) => s.trim().startsWith('What is 2 + 2?')), true);
  await page.getByTestId('new-chat').click();
  await page.getByTestId('empty-thread').waitFor();
  await page.getByTestId('conversation').nth(1).locator('button.title').click();
  await page.getByTestId('answer').waitFor();
  await thinking.locator('summary').click();
  assert.equal(await thinking.evaluate((d) => d.open), true, 'the thought can be reopened');
  await page.close();
});

test('chat: a long thought shows its newest line, and stays where the reader scrolls it', async () => {
  const page = await ctx.browser.newPage();
  await mockIpc(page, chatMocks);
  await page.addInitScript(() => {
    // Short lines, blank lines and lines long enough to wrap.
    window.__thought = Array.from({ length: 80 }, (_, k) => (k % 7 === 3 ? '\n' : `Step ${k}: ${'we check the sum again, '.repeat(k % 5 === 0 ? 9 : 1)}\n`));
    window.__hold = true;
    window.__holdAt = 1 + 40;
  });
  await page.goto(ctx.server.url);
  await page.getByTestId('composer').fill('Think long');
  await page.getByTestId('composer').press('Enter');
  const shown = (n) => page.waitForFunction((n) => document.querySelector('[data-testid=thinking-text]')?.textContent === window.__thought.slice(0, n).join(''), n);
  await shown(40);
  const box = page.getByTestId('thinking-text');
  await page.waitForFunction(() => { const b = document.querySelector('[data-testid=thinking-text]'); return b.scrollTop > 0 && b.scrollTop + b.clientHeight >= b.scrollHeight - 1; });

  // One element per line, laid out as the whole text in one pre-wrap block would be.
  const [lines, height, asOne] = await box.evaluate((b) => {
    const probe = document.createElement('div');
    const style = getComputedStyle(b);
    Object.assign(probe.style, { whiteSpace: 'pre-wrap', font: style.font, lineHeight: style.lineHeight, width: `${b.clientWidth}px`, position: 'absolute', visibility: 'hidden' });
    probe.textContent = b.textContent;
    document.body.append(probe);
    const h = probe.getBoundingClientRect().height;
    probe.remove();
    return [b.children.length, b.scrollHeight, h];
  });
  assert.equal(lines, 41, 'forty lines and the empty one after the last line break');
  assert.ok(Math.abs(height - asOne) <= 1, `the lines are ${height}px tall, the text in one block ${asOne}px`);

  // The reader scrolls up: the newer lines no longer pull the box down.
  await box.evaluate((b) => { b.scrollTop = 0; });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  await page.evaluate(() => { window.__holdAt = 1 + 60; });
  await shown(60);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  assert.equal(await box.evaluate((b) => b.scrollTop), 0);
  await page.evaluate(() => { window.__hold = false; });
  await page.getByTestId('stats').waitFor();
  await page.close();
});

test('chat: Stop asks Rust to stop the reply', async () => {
  const page = await ctx.browser.newPage();
  await mockIpc(page, chatMocks);
  await page.addInitScript(() => { window.__hold = true; });
  await page.goto(ctx.server.url);
  await page.getByTestId('composer').fill('Count to a million');
  await page.getByTestId('send').click();
  // Clicked only once the held thought is shown: a button that moves between press and release
  // (the thinking block replacing the waiting line) gets no click, for a user or for the test.
  await page.waitForFunction(() => document.querySelector('[data-testid=thinking-text]')?.textContent === 'The user asks for 2 + 2. Adding gives 4.');
  await page.getByTestId('stop').click();
  await page.waitForFunction(() => window.__stops?.length === 1);
  // The composer's Stop does the same, for the open conversation.
  await page.getByTestId('composer-stop').click();
  await page.waitForFunction(() => window.__stops?.length === 2);
  assert.deepEqual(await page.evaluate(() => window.__stops), [1, 1]);
  await page.close();
});

test('chat: the Think switch belongs to the conversation, and is fixed for a model that always thinks', async () => {
  const page = await ctx.browser.newPage();
  const qwen3 = { ...info, name: 'Tiny Qwen3', architecture: 'qwen3', thinking: 'switchable' };
  await mockIpc(page, { ...chatMocks, model_status: { state: 'ready', info: qwen3 },
    set_conversation_thinking: ({ id, thinking }) => {
      const c = window.__db.convs.find((x) => x.id === id);
      c.thinking = thinking;
      (window.__thinkCalls ??= []).push([id, thinking]);
      return c;
    } });
  await page.goto(ctx.server.url);
  const toggle = page.getByTestId('think-toggle');
  assert.equal(await toggle.isChecked(), true, 'on by default for a model that can think');
  assert.equal(await toggle.isEnabled(), true);
  // Turned off before the first question: the new conversation keeps it.
  await toggle.click();
  await page.getByTestId('composer').fill('What is 2 + 2?');
  await page.getByTestId('send').click();
  await page.getByTestId('stats').waitFor();
  assert.deepEqual(await page.evaluate(() => window.__thinkCalls), [[1, false]]);
  assert.equal(await toggle.isChecked(), false);
  // A new conversation follows the model again; the first keeps its own switch.
  await page.getByTestId('new-chat').click();
  await page.waitForFunction(() => document.querySelector('[data-testid=think-toggle]').checked);
  await page.getByTestId('conversation').filter({ hasText: 'What is 2 + 2?' }).locator('button.title').click();
  await page.waitForFunction(() => !document.querySelector('[data-testid=think-toggle]').checked);
  await page.close();

  // An R1 model always thinks: on, and not to be changed.
  const r1 = await ctx.browser.newPage();
  await mockIpc(r1, chatMocks);
  await r1.goto(ctx.server.url);
  assert.equal(await r1.getByTestId('think-toggle').isChecked(), true);
  assert.equal(await r1.getByTestId('think-toggle').isDisabled(), true);
  assert.equal(await r1.getByTestId('think').getAttribute('title'), 'This model always thinks before it answers.');
  await r1.close();
});

test('settings: switching to Chinese translates the window and is saved', async () => {
  const page = await ctx.browser.newPage();
  const local = (path, name, current) => ({ path, source: 'folder', origin: '/m', file_size: 4.9e8, problem: null, current,
    info: name && { ...info, name, path } });
  await mockIpc(page, { ...chatMocks, save_settings: ({ settings }) => { window.__saved = settings; return settings; },
    local_models: [local('/m/x.gguf', 'Tiny R1', true), local('/m/small.gguf', 'Small', false), local('/m/gemma.gguf', null, false)] });
  await page.goto(ctx.server.url);
  await page.getByTestId('tab-settings').click();
  await page.getByTestId('language').selectOption('zh-CN');
  await page.getByTestId('thinking-budget').fill('256');
  await page.getByTestId('theme').selectOption('dark');
  await page.getByTestId('kv-cache').selectOption('q8_0');
  // Any model Ponder runs, other than the one in use, may draft.
  const drafts = page.getByTestId('draft-model').locator('option');
  await drafts.nth(1).waitFor({ state: 'attached' });
  assert.deepEqual(await drafts.evaluateAll((os) => os.map((o) => o.textContent)), ['None: guess from the text', 'Small · 0.49 GB']);
  await page.getByTestId('draft-model').selectOption({ label: 'Small · 0.49 GB' });
  assert.equal(await page.getByTestId('speculative').isChecked(), true);
  await page.getByTestId('speculative').uncheck();
  await page.getByTestId('save-settings').click();
  await page.getByTestId('settings-message').waitFor();
  assert.equal(await page.getByTestId('settings-message').textContent(), '已保存。');
  assert.equal(await page.getByTestId('tab-chat').textContent(), '对话');
  const saved = await page.evaluate(() => window.__saved);
  assert.equal(saved.language, 'zh-CN');
  assert.equal(saved.thinking_budget, 256);
  assert.equal(saved.kv_cache, 'q8_0');
  assert.equal(saved.speculative_decoding, false);
  assert.equal(saved.draft_model_path, '/m/small.gguf');
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN');
  await page.close();
});

test('chat: a conversation exports as Markdown, with or without the thinking', async () => {
  const page = await ctx.browser.newPage();
  await mockIpc(page, { ...chatMocks,
    pick_save_path: (args) => { window.__saveDialog = args; return '/home/me/What is 2 + 2.md'; },
    export_conversation: (args) => { (window.__exports ??= []).push(args); return null; } });
  await page.goto(ctx.server.url);
  await page.getByTestId('empty-thread').waitFor();
  assert.equal(await page.getByTestId('chat-export').count(), 0, 'nothing to export yet');
  await page.getByTestId('composer').fill('What is 2 + 2?');
  await page.getByTestId('composer').press('Enter');
  await page.getByTestId('stats').waitFor();

  await page.getByTestId('chat-export').locator('summary').click();
  await page.getByTestId('chat-export-answers').click();
  await page.waitForFunction(() => window.__exports?.length === 1);
  assert.deepEqual(await page.evaluate(() => window.__saveDialog), { title: 'Save the conversation as', fileName: 'What is 2 + 2.md', extension: 'md' });
  await page.getByTestId('chat-export').locator('summary').click();
  await page.getByTestId('chat-export-thinking').click();
  await page.waitForFunction(() => window.__exports?.length === 2);
  const id = await page.evaluate(() => window.__db.convs[0].id);
  assert.deepEqual(await page.evaluate(() => window.__exports), [
    { id, path: '/home/me/What is 2 + 2.md', withThinking: false },
    { id, path: '/home/me/What is 2 + 2.md', withThinking: true },
  ]);
  await page.close();
});
