import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ChatEvent, ChatMessage } from './api';

// The Rust side of a chat, as the controller sees it: the reply's events come through the
// callback `send` was given.
let onEvent: (e: ChatEvent) => void = () => {};
const message = (id: number, role: 'user' | 'assistant'): ChatMessage => ({
  id, conversation_id: 1, role, content: role === 'user' ? 'Q' : '', thinking: '', finish_reason: role === 'user' ? 'stop' : null, stats: null,
});
vi.mock('./api', () => ({
  chat: {
    create: async () => ({ id: 1, title: '', updated_at: 0, thinking: null }),
    list: async () => [],
    send: async (_id: number, _content: string, cb: (e: ChatEvent) => void) => {
      onEvent = cb;
      return { question: message(1, 'user'), reply: message(2, 'assistant') };
    },
  },
}));

const { ChatController } = await import('./chat.svelte');
const { STREAM_UPDATE_MS } = await import('./cadence');

afterEach(() => vi.useRealTimers());

describe('ChatController', () => {
  it('shows a streaming reply at most every STREAM_UPDATE_MS, and its end at once', async () => {
    vi.useFakeTimers();
    const c = new ChatController();
    await c.send('Q');
    const reply = () => c.messages[1];
    const token = (text: string) => onEvent({ event: 'delta', channel: 'answer', text });

    // The first token shows in the next frame.
    token('a');
    await vi.advanceTimersByTimeAsync(20);
    expect(reply().content).toBe('a');
    // Tokens in the next 100 ms wait for one update together.
    token('b');
    await vi.advanceTimersByTimeAsync(30);
    token('c');
    await vi.advanceTimersByTimeAsync(30);
    expect(reply().content).toBe('a');
    expect(reply().liveAnswerTokens).toBe(1);
    await vi.advanceTimersByTimeAsync(STREAM_UPDATE_MS);
    expect(reply().content).toBe('abc');
    expect(reply().liveAnswerTokens).toBe(3);
    // The end of the reply is not held back, and brings what was waiting with it.
    token('d');
    onEvent({ event: 'finished', message: { ...message(2, 'assistant'), content: 'abcd', finish_reason: 'stop' }, error: null });
    expect(reply().content).toBe('abcd');
    expect(reply().finish_reason).toBe('stop');
    expect(c.streaming).toBe(false);
  });

  it('times the thought from when its tokens arrived, not from when they were shown', async () => {
    vi.useFakeTimers({ now: 10_000 });
    const c = new ChatController();
    await c.send('Q');
    onEvent({ event: 'delta', channel: 'thinking', text: 'Hmm' });
    await vi.advanceTimersByTimeAsync(50);
    onEvent({ event: 'delta', channel: 'thinking', text: '.' });
    await vi.advanceTimersByTimeAsync(30);
    onEvent({ event: 'delta', channel: 'answer', text: '4' });
    await vi.advanceTimersByTimeAsync(STREAM_UPDATE_MS * 2);
    expect(c.messages[1].thinkingStartedAt).toBe(10_000);
    expect(c.messages[1].thinkingEndedAt).toBe(10_080);
  });
});
