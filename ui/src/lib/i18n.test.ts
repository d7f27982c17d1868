import { describe, expect, it } from 'vitest';
import { dictionaries, errorText, finishText, setLanguage, t, warningText, type MessageKey } from './i18n.svelte';

const placeholders = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

// Every component and module of the UI, as text.
const sources = import.meta.glob<string>(['../**/*.svelte', '../**/*.ts', '!../**/*.test.ts'], { query: '?raw', import: 'default', eager: true });

describe('i18n', () => {
  const en = dictionaries.en;
  const zh = dictionaries['zh-CN'];

  it('has every key in both languages, translated, with the same placeholders', () => {
    expect(Object.keys(zh).sort()).toEqual(Object.keys(en).sort());
    for (const key of Object.keys(en) as MessageKey[]) {
      expect(zh[key].trim(), key).not.toBe('');
      expect(placeholders(zh[key]), key).toEqual(placeholders(en[key]));
    }
    // Chinese text is Chinese: only names (instruction sets, other tools, "Top-p") read the same.
    const same = (Object.keys(en) as MessageKey[]).filter((k) => en[k] === zh[k]);
    expect(same.sort()).toEqual(['model.kernel.amx', 'model.kernel.avx2', 'model.kernel.avx512', 'models.source.lm_studio', 'models.source.ollama', 'settings.topP']);
  });

  it('every key the components use exists', () => {
    const used = new Set<string>();
    const prefixes = new Set<string>();
    expect(Object.keys(sources)).toContain('../App.svelte');
    for (const text of Object.values(sources)) {
      for (const m of text.matchAll(/\bt\(\s*'([\w.]+)'/g)) used.add(m[1]);
      // t(`jobs.state.${state}`): every key under the prefix may be used.
      for (const m of text.matchAll(/\bt\(\s*`([\w.]+)\$\{/g)) prefixes.add(m[1]);
    }
    expect(used.size).toBeGreaterThan(40);
    const missing = [...used].filter((k) => !(k in en));
    expect(missing).toEqual([]);
    // And no key is dead weight.
    const unused = Object.keys(en).filter((k) => !used.has(k) && ![...prefixes].some((p) => k.startsWith(p)));
    expect(unused).toEqual([]);
  });

  it('switches language and fills placeholders', () => {
    expect(t('chat.tokens', { count: 12 })).toBe('12 tokens');
    setLanguage('zh-CN');
    expect(t('chat.tokens', { count: 12 })).toBe('12 个词元');
    expect(document.documentElement.lang).toBe('zh-CN');
    setLanguage('en');
  });

  it("shows Rust's errors in the window's language, by their code", () => {
    const tooMany = { code: 'read.too_many', params: { path: 'set.csv', limit: '5' }, message: 'set.csv: more than 5 problems, the limit for one file' };
    setLanguage('zh-CN');
    expect(errorText(tooMany)).toBe('set.csv：题目超过 5 道，这是单个文件的上限');
    setLanguage('en');
    expect(errorText(tooMany)).toBe('set.csv: more than 5 problems, the limit for one file');
    // A code the window has no words for, and a plain string, show as they came.
    expect(errorText({ code: 'app', params: {}, message: 'stop the job before deleting it' })).toBe('stop the job before deleting it');
    expect(errorText('notes.pdf: unsupported file type')).toBe('notes.pdf: unsupported file type');
  });

  it('shows file warnings and how samples ended in the window\'s language', () => {
    const dup = { line: 7, code: 'duplicate_id' as const, params: { id: '3', first_line: '4', renamed: '3-2' }, message: 'duplicate id "3" (first at line 4); renamed to "3-2"' };
    setLanguage('zh-CN');
    expect(warningText(dup)).toBe('编号“3”重复（首次出现在第 4 行），已改为“3-2”');
    expect(finishText('length')).toBe('达到长度上限被截断');
    expect(finishText('error: the engine stopped')).toBe('error: the engine stopped');
    expect(finishText('refused: request too long')).toBe('被拒绝：request too long');
    setLanguage('en');
    expect(finishText('refused: HTTP 400 from http://gpu/v1')).toBe('refused: HTTP 400 from http://gpu/v1');
    expect(warningText(dup)).toBe('duplicate id “3” (first at line 4); renamed to “3-2”');
  });
});
