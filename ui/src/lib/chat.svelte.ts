// The chat window's state: the conversation list, the open conversation, and replies as they
// stream in. Rust owns the conversations; this only mirrors them and applies stream events.
import { chat, type ChatEvent, type ChatMessage, type CommandError, type Conversation } from './api';
import { errorText } from './i18n.svelte';
import { cadenced } from './cadence';

/** A message as shown: the stored one plus what only matters while it streams. */
export interface ShownMessage extends ChatMessage {
  /** Tokens so far (deltas are single tokens or a few bytes of one), while streaming. */
  liveThinkingTokens: number;
  liveAnswerTokens: number;
  /** When thinking started and ended, for the live timer. */
  thinkingStartedAt: number | null;
  thinkingEndedAt: number | null;
  /** Why the reply failed; translated where it is shown, so it follows the window's language. */
  error: CommandError | null;
}

function shown(m: ChatMessage, error: CommandError | null = null): ShownMessage {
  return { ...m, liveThinkingTokens: 0, liveAnswerTokens: 0, thinkingStartedAt: null, thinkingEndedAt: null, error };
}

export class ChatController {
  conversations = $state<Conversation[]>([]);
  query = $state('');
  activeId = $state<number | null>(null);
  messages = $state<ShownMessage[]>([]);
  error = $state<string | null>(null);

  /** The Think switch chosen before a new conversation exists; it is kept when one is made. */
  pendingThinking = $state<boolean | null>(null);

  /** The open conversation's Think switch (null: the model's default). */
  get thinking(): boolean | null {
    if (this.activeId === null) return this.pendingThinking;
    return this.conversations.find((c) => c.id === this.activeId)?.thinking ?? null;
  }

  async setThinking(on: boolean | null) {
    if (this.activeId === null) {
      this.pendingThinking = on;
      return;
    }
    try {
      const updated = await chat.setThinking(this.activeId, on);
      this.conversations = this.conversations.map((c) => (c.id === updated.id ? updated : c));
    } catch (e) {
      this.error = errorText(e);
    }
  }

  /** A new conversation, with the Think switch chosen while none was open. */
  private async createWithPending(): Promise<Conversation> {
    const c = await chat.create();
    const pending = this.pendingThinking;
    this.pendingThinking = null;
    return pending === null ? c : chat.setThinking(c.id, pending);
  }

  /** Whether the open conversation has a reply being written. */
  get streaming(): boolean {
    return this.messages.some((m) => m.role === 'assistant' && m.finish_reason === null && !m.error);
  }

  async refresh() {
    this.conversations = await chat.list(this.query);
  }

  async search(query: string) {
    this.query = query;
    await this.refresh();
  }

  async open(id: number) {
    this.activeId = id;
    this.error = null;
    const messages = await chat.messages(id);
    if (this.activeId === id) this.messages = messages.map((m) => shown(m));
  }

  async newConversation() {
    const c = await this.createWithPending();
    this.query = '';
    await this.refresh();
    await this.open(c.id);
  }

  async rename(id: number, title: string) {
    await chat.rename(id, title);
    await this.refresh();
  }

  async remove(id: number) {
    await chat.remove(id);
    if (this.activeId === id) {
      this.activeId = null;
      this.messages = [];
    }
    await this.refresh();
  }

  async send(text: string) {
    const content = text.trim();
    if (!content || this.streaming) return;
    this.error = null;
    try {
      if (this.activeId === null) {
        const c = await this.createWithPending();
        this.conversations = [c, ...this.conversations];
        this.activeId = c.id;
        this.messages = [];
      }
      const stream = this.stream(this.activeId);
      const { question, reply } = await chat.send(this.activeId, content, stream.onEvent);
      this.messages = [...this.messages, shown(question), shown(reply)];
      stream.attach(reply.id);
      await this.refresh();
    } catch (e) {
      this.error = errorText(e);
    }
  }

  async stop() {
    if (this.activeId !== null) await chat.stop(this.activeId);
  }

  async regenerate() {
    if (this.activeId === null || this.streaming) return;
    try {
      const stream = this.stream(this.activeId);
      const reply = await chat.regenerate(this.activeId, stream.onEvent);
      const lastQuestion = this.messages.findLastIndex((m) => m.role === 'user');
      this.messages = [...this.messages.slice(0, lastQuestion + 1), shown(reply)];
      stream.attach(reply.id);
    } catch (e) {
      this.error = errorText(e);
    }
  }

  async editAndResend(messageId: number, text: string) {
    if (this.activeId === null || this.streaming) return;
    try {
      const stream = this.stream(this.activeId);
      const reply = await chat.editAndResend(messageId, text, stream.onEvent);
      const at = this.messages.findIndex((m) => m.id === messageId);
      const question = { ...this.messages[at], content: text.trim() };
      this.messages = [...this.messages.slice(0, at), question, shown(reply)];
      stream.attach(reply.id);
    } catch (e) {
      this.error = errorText(e);
    }
  }

  /** Routes a reply's events to its message. Events can arrive before the command that started
   * the reply returns its id; they wait in a buffer until `attach`. Deltas are shown together
   * (see cadence.ts). */
  private stream(conversationId: number) {
    let replyId: number | null = null;
    const early: ChatEvent[] = [];
    const deliver = cadenced((e: ChatEvent, at: number) => {
      if (e.event === 'finished') void this.refresh();
      if (conversationId !== this.activeId) return;
      const m = this.messages.find((x) => x.id === replyId);
      if (m) applyEvent(m, e, at);
    }, (e) => e.event === 'delta');
    return {
      onEvent: (e: ChatEvent) => (replyId === null ? early.push(e) : deliver(e)),
      attach: (id: number) => {
        replyId = id;
        early.splice(0).forEach(deliver);
      },
    };
  }
}

/** Applies one stream event to a reply. */
export function applyEvent(m: ShownMessage, e: ChatEvent, now = Date.now()) {
  switch (e.event) {
    case 'started':
      break;
    case 'delta':
      if (e.channel === 'thinking') {
        m.thinkingStartedAt ??= now;
        m.thinking += e.text;
        m.liveThinkingTokens += 1;
      } else {
        if (m.thinkingStartedAt !== null) m.thinkingEndedAt ??= now;
        m.content += e.text;
        m.liveAnswerTokens += 1;
      }
      break;
    case 'finished':
      Object.assign(m, e.message);
      m.error = e.error;
      break;
  }
}
