import { afterEach, describe, expect, it } from 'vitest';
import { cleanup, render, screen } from '@testing-library/svelte';
import ModelCard from './ModelCard.svelte';
import type { ModelInfo } from './api';

afterEach(cleanup);

const info = (over: Partial<ModelInfo>): ModelInfo => ({
  name: 'm', path: '/m.gguf', architecture: 'qwen2', quantization: 'Q4K', file_size: 1e9, context_length: 4096,
  parameters: 1.5e9, reasoning: false, thinking: 'never', kernel: 'avx512', ...over,
});

describe('ModelCard', () => {
  it("shows the architecture and the family's thinking behaviour", () => {
    const shown = (over: Partial<ModelInfo>) => {
      render(ModelCard, { info: info(over) });
      const text = screen.getByTestId('model-architecture').textContent;
      cleanup();
      return text;
    };
    expect(shown({ architecture: 'qwen2', reasoning: true, thinking: 'always' })).toBe('qwen2 · always thinks first');
    expect(shown({ architecture: 'qwen3', reasoning: true, thinking: 'switchable' })).toBe('qwen3 · thinks first unless turned off');
    expect(shown({ architecture: 'llama' })).toBe('llama');
  });

  it('says which kernels multiply the weights on this computer', () => {
    const shown = (over: Partial<ModelInfo>) => {
      render(ModelCard, { info: info(over) });
      const text = screen.getByTestId('model-kernels').textContent;
      cleanup();
      return text;
    };
    expect(shown({ kernel: 'amx' })).toBe('AVX-512 + AMX');
    expect(shown({ kernel: 'avx512' })).toBe('AVX-512');
    expect(shown({ kernel: 'avx2' })).toBe('AVX2');
    expect(shown({ kernel: 'reference' })).toBe('portable, without SIMD');
    expect(shown({ kernel: null, quantization: 'F16' })).toBe('candle’s (for these weight types)');
  });
});
