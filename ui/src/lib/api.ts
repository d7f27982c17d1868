// The one place the UI talks to Rust. Components call these functions, never `invoke` directly,
// so tests can mock the IPC at a single seam.
import { invoke } from '@tauri-apps/api/core';

export interface ModelInfo {
  name: string;
  path: string;
  architecture: string;
  quantization: string;
  file_size: number;
  context_length: number;
  parameters: number;
  reasoning: boolean;
}

export type ModelStatus =
  | { state: 'missing'; default_model: string }
  | { state: 'invalid'; path: string; error: string; default_model: string }
  | { state: 'ready'; info: ModelInfo };

export function modelStatus(): Promise<ModelStatus> {
  return invoke<ModelStatus>('model_status');
}
