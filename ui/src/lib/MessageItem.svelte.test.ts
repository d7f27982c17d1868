import { afterEach, describe, expect, it, vi } from 'vitest';
import { flushSync } from 'svelte';
import { cleanup, fireEvent, render, screen } from '@testing-library/svelte';
import MessageItem from './MessageItem.svelte';
import { applyEvent, type ShownMessage } from './chat.svelte';

function reply(over: Partial<ShownMessage> = {}): ShownMessage {
  return {
    id: 2, conversation_id: 1, role: 'assistant', content: '', thinking: '', finish_reason: null, stats: null,
    liveThinkingTokens: 0, liveAnswerTokens: 0, thinkingStartedAt: null, thinkingEndedAt: null, error: null, ...over,
  };
}

afterEach(cleanup);

const details = () => screen.getByTestId('thinking') as HTMLDetailsElement;

describe('MessageItem', () => {
  it('streams the thinking open, folds it when the answer starts, and renders the answer', async () => {
    const message = $state(reply());
    render(MessageItem, { message, last: true });
    expect(screen.getByTestId('waiting')).toBeTruthy();

    applyEvent(message, { event: 'delta', channel: 'thinking', text: 'Two plus ' }, 1000);
    applyEvent(message, { event: 'delta', channel: 'thinking', text: 'two…' }, 1100);
    flushSync();
    expect(details().open).toBe(true);
    expect(details().dataset.state).toBe('thinking');
    expect(screen.getByTestId('thinking-text').textContent).toBe('Two plus two…');
    expect(screen.getByTestId('thinking-meta').textContent).toMatch(/^2 tokens · /);
    expect(screen.getByTestId('stop')).toBeTruthy();
    expect(screen.queryByTestId('answer')).toBeNull();

    applyEvent(message, { event: 'delta', channel: 'answer', text: 'The answer is $\\boxed{4}$' }, 3600);
    flushSync();
    expect(details().open).toBe(false);
    expect(details().dataset.state).toBe('done');
    expect(screen.getByTestId('answer').querySelector('.katex')).toBeTruthy();
    expect(details().querySelector('summary')!.textContent).toContain('Thought for 2.6 s');

    // The reader can open the thought again.
    await fireEvent.click(details().querySelector('summary')!);
    details().open = true;
    flushSync();
    expect(details().open).toBe(true);

    applyEvent(message, { event: 'finished', error: null, message: { ...message, content: 'The answer is $\\boxed{4}$', finish_reason: 'stop',
      stats: { time_to_first_token_s: 0.42, tokens_per_second: 17.25, thinking_tokens: 31, answer_tokens: 9, thinking_seconds: 2.5 } } });
    flushSync();
    expect(screen.getByTestId('stats').textContent).toBe('First token 0.42 s · 17.3 tok/s · 31 thinking + 9 answer tokens');
    expect(screen.getByTestId('thinking-meta').textContent).toBe('31 tokens');
    expect(screen.queryByTestId('stop')).toBeNull();
    expect(screen.getByTestId('regenerate')).toBeTruthy();
    expect(screen.queryByTestId('notice')).toBeNull();
  });

  it('says why a reply ended early', () => {
    render(MessageItem, { message: reply({ content: 'partial', finish_reason: 'cancelled' }) });
    expect(screen.getByTestId('notice').textContent).toBe('Stopped.');
  });

  it('shows an error in the window\'s words', () => {
    const error = { code: 'engine.no_model', params: {}, message: 'no model is loaded' };
    render(MessageItem, { message: reply({ finish_reason: 'error', error }) });
    expect(screen.getByTestId('notice').textContent).toBe('Failed: No model is loaded.');
  });

  it('shows an error the window has no words for in Rust\'s English', () => {
    const error = { code: 'engine.something_new', params: {}, message: 'a new failure' };
    render(MessageItem, { message: reply({ finish_reason: 'error', error }) });
    expect(screen.getByTestId('notice').textContent).toBe('Failed: a new failure');
  });

  it('renders a hostile answer inert', () => {
    const { container } = render(MessageItem, { message: reply({ finish_reason: 'stop',
      content: '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>[x](javascript:window.pwned=3)' }) });
    expect(container.querySelector('script')).toBeNull();
    expect(container.querySelector('[onerror]')).toBeNull();
    expect(container.querySelector('a[href^="javascript"]')).toBeNull();
    expect((window as unknown as { pwned?: number }).pwned).toBeUndefined();
  });

  it('edits a question and sends it again', async () => {
    const onEdit = vi.fn();
    render(MessageItem, { message: reply({ role: 'user', content: 'What is 2+2?', finish_reason: null }), onEdit });
    expect(screen.getByTestId('question').textContent).toBe('What is 2+2?');
    await fireEvent.click(screen.getByTestId('edit'));
    const box = screen.getByTestId('edit-box') as HTMLTextAreaElement;
    await fireEvent.input(box, { target: { value: 'What is 3+3?' } });
    await fireEvent.click(screen.getByTestId('resend'));
    expect(onEdit).toHaveBeenCalledWith('What is 3+3?');
  });
});
