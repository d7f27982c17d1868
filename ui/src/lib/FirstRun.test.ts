import { describe, expect, it, vi } from 'vitest';
import { fireEvent, render, screen } from '@testing-library/svelte';
import FirstRun from './FirstRun.svelte';

describe('FirstRun', () => {
  it('offers the default model download and a local file', async () => {
    const onDownload = vi.fn();
    const onOpenLocal = vi.fn();
    render(FirstRun, { defaultModel: 'Test Model 1B', onDownload, onOpenLocal });
    expect(screen.getByText('Test Model 1B')).toBeTruthy();
    await fireEvent.click(screen.getByTestId('download-default'));
    expect(onDownload).toHaveBeenCalledOnce();
    expect(onOpenLocal).not.toHaveBeenCalled();
    await fireEvent.click(screen.getByTestId('open-local'));
    expect(onOpenLocal).toHaveBeenCalledOnce();
  });
});
