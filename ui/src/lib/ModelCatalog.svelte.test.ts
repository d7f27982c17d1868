import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/svelte';
import ModelCatalog from './ModelCatalog.svelte';
import type { CatalogEntry, CatalogModel } from './api';
import { setLanguage } from './i18n.svelte';

afterEach(() => {
  cleanup();
  setLanguage('en');
});

const model = (over: Partial<CatalogModel>): CatalogModel => ({
  id: 'qwen3-4b', display_name: 'Qwen3-4B', repo: 'unsloth/Qwen3-4B-GGUF', file: 'Qwen3-4B-Q4_K_M.gguf',
  approx_bytes: 2_500_000_000, min_ram_gb: 8, family: 'qwen3', thinking: 'switchable', good_for: 'Rust text', ...over,
});
const entry = (over: Partial<CatalogModel>, downloaded: string | null = null, current = false): CatalogEntry =>
  ({ model: model(over), label: `${model(over).display_name} (Q4_K_M, ${(model(over).approx_bytes / 1e9).toFixed(1)} GB)`, downloaded, current });

describe('ModelCatalog', () => {
  it('lists each model with its size, family, thinking and memory, and offers what fits its state', async () => {
    const onChoose = vi.fn();
    render(ModelCatalog, { entries: [
      entry({}),
      entry({ id: 'deepseek-r1-distill-qwen-1.5b', display_name: 'DeepSeek-R1-Distill-Qwen-1.5B', approx_bytes: 1_120_000_000,
        family: 'qwen2', thinking: 'always', min_ram_gb: 4 }, '/hf/r1.gguf', true),
      entry({ id: 'some-new-model', display_name: 'New', family: 'llama', thinking: 'never', good_for: 'Said in Rust.' }, '/hf/new.gguf'),
    ], onChoose });
    const rows = screen.getAllByTestId('catalog-model');
    expect(rows[0].textContent).toContain('Qwen3-4B (Q4_K_M, 2.5 GB)');
    expect(rows[0].textContent).toContain('qwen3 · thinks first unless turned off · needs 8 GB of memory');
    expect(rows[0].textContent).toContain('Noticeably stronger reasoning');
    expect(rows[1].textContent).toContain('qwen2 · always thinks first');
    expect(rows[1].querySelector('[data-testid=catalog-in-use]')).toBeTruthy();
    // A model the window has no words for keeps Rust's description.
    expect(rows[2].textContent).toContain('Said in Rust.');
    const actions = screen.getAllByTestId('catalog-action');
    expect(actions.map((b) => b.textContent)).toEqual(['Download', 'Use']);
    await fireEvent.click(actions[1]);
    expect(onChoose).toHaveBeenCalledWith('some-new-model');
  });

  it('speaks the window language and waits while a download runs', () => {
    setLanguage('zh-CN');
    render(ModelCatalog, { entries: [entry({})], busy: true });
    expect(screen.getByTestId('catalog-model').textContent).toContain('推理能力明显更强');
    expect((screen.getByTestId('catalog-action') as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByTestId('catalog-action').textContent).toBe('下载');
  });
});
