// The one place the UI talks to Rust. Components call these functions, never `invoke` directly,
// so tests can mock the IPC at a single seam.
import { invoke } from '@tauri-apps/api/core';

export type ModelStatus =
  | { state: 'missing'; default_model: string }
  | { state: 'ready'; path: string };

export function modelStatus(): Promise<ModelStatus> {
  return invoke<ModelStatus>('model_status');
}
