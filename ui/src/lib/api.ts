// The one place the UI talks to Rust. Components call these functions, never `invoke` directly,
// so tests can mock the IPC at a single seam.
import { Channel, invoke } from '@tauri-apps/api/core';

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

export function openModel(path: string): Promise<ModelStatus> {
  return invoke<ModelStatus>('open_model', { path });
}

export type DownloadEvent =
  | { event: 'started'; total_bytes: number }
  | { event: 'progress'; downloaded_bytes: number; total_bytes: number; bytes_per_second: number }
  | { event: 'finished'; path: string }
  | { event: 'failed'; error: string };

export function downloadDefaultModel(onEvent: (e: DownloadEvent) => void): Promise<ModelStatus> {
  const channel = new Channel<DownloadEvent>();
  channel.onmessage = onEvent;
  return invoke<ModelStatus>('download_default_model', { onEvent: channel });
}

export function cancelDownload(): Promise<void> {
  return invoke<void>('cancel_download');
}

// ---- Files: dialogs run in Rust, which grants what the user picks ----

export const files = {
  pickQuestionFiles: (title: string, filter: string) => invoke<string[]>('pick_question_files', { title, filter }),
  pickModel: (folder: boolean, title: string) => invoke<string | null>('pick_model', { folder, title }),
  pickSavePath: (title: string, fileName: string, extension: string) =>
    invoke<string | null>('pick_save_path', { title, fileName, extension }),
};

// ---- Settings ----

export type Language = 'en' | 'zh-CN';
export type Theme = 'light' | 'dark' | 'system';

export interface Settings {
  model_path: string | null;
  threads: number;
  max_sequences: number;
  context_size: number;
  temperature: number;
  top_p: number;
  max_tokens: number;
  thinking_budget: number | null;
  server_enabled: boolean;
  server_port: number;
  remote_url: string | null;
  remote_model: string | null;
  language: Language;
  theme: Theme;
}

export function getSettings(): Promise<Settings> {
  return invoke<Settings>('get_settings');
}

export function saveSettings(settings: Settings): Promise<Settings> {
  return invoke<Settings>('save_settings', { settings });
}

// ---- Engine ----

export interface EngineStats {
  running: number;
  paused: number;
  waiting: number;
  kv_tokens_used: number;
  kv_tokens_budget: number;
  tokens_per_second: number;
  total_generated: number;
}

export type EngineStatus =
  | { state: 'empty' }
  | { state: 'loading'; path: string }
  | { state: 'ready'; model: ModelInfo; stats: EngineStats }
  | { state: 'failed'; path: string; error: string };

export function engineStatus(): Promise<EngineStatus> {
  return invoke<EngineStatus>('engine_status');
}

// ---- Chat ----

export interface Conversation {
  id: number;
  title: string;
  updated_at: number;
}

export interface ReplyStats {
  time_to_first_token_s: number | null;
  tokens_per_second: number;
  thinking_tokens: number;
  answer_tokens: number;
  thinking_seconds: number | null;
}

export interface ChatMessage {
  id: number;
  conversation_id: number;
  role: 'user' | 'assistant';
  content: string;
  thinking: string;
  /** null while the reply is being written. */
  finish_reason: string | null;
  stats: ReplyStats | null;
}

export type ChatEvent =
  | { event: 'started'; prompt_tokens: number }
  | { event: 'delta'; channel: 'thinking' | 'answer'; text: string }
  | { event: 'finished'; message: ChatMessage; error: string | null };

function chatChannel(onEvent: (e: ChatEvent) => void): Channel<ChatEvent> {
  const channel = new Channel<ChatEvent>();
  channel.onmessage = onEvent;
  return channel;
}

export const chat = {
  list: (query = '') => invoke<Conversation[]>('list_conversations', { query }),
  create: () => invoke<Conversation>('create_conversation'),
  rename: (id: number, title: string) => invoke<void>('rename_conversation', { id, title }),
  remove: (id: number) => invoke<void>('delete_conversation', { id }),
  messages: (conversationId: number) => invoke<ChatMessage[]>('get_messages', { conversationId }),
  send: (conversationId: number, content: string, onEvent: (e: ChatEvent) => void) =>
    invoke<{ question: ChatMessage; reply: ChatMessage }>('send_message', { conversationId, content, onEvent: chatChannel(onEvent) }),
  regenerate: (conversationId: number, onEvent: (e: ChatEvent) => void) =>
    invoke<ChatMessage>('regenerate', { conversationId, onEvent: chatChannel(onEvent) }),
  editAndResend: (messageId: number, content: string, onEvent: (e: ChatEvent) => void) =>
    invoke<ChatMessage>('edit_and_resend', { messageId, content, onEvent: chatChannel(onEvent) }),
  stop: (conversationId: number) => invoke<void>('stop_reply', { conversationId }),
};

// ---- Local API server ----

export type ServerStatus =
  | { state: 'off' }
  | { state: 'starting'; port: number }
  | { state: 'on'; port: number; url: string }
  | { state: 'failed'; port: number; error: string };

export function serverStatus(): Promise<ServerStatus> {
  return invoke<ServerStatus>('server_status');
}

// ---- Batch jobs ----

export interface Problem {
  id: string;
  question: string;
  key: string | null;
  extra: [string, string][];
  line: number;
}

export interface FilePreview {
  path: string;
  name: string;
  format: string;
  encoding: string;
  problem_count: number;
  problems: Problem[];
  has_key: boolean;
  columns: { question: string | null; key: string | null; id: string | null; extra: string[] };
  warnings: { line: number; message: string }[];
  suggested_samples: number;
}

export interface JobOptions {
  samples: number;
  max_tokens: number;
  thinking_budget: number | null;
  temperature: number;
  top_p: number;
  seed: number | null;
  math_instruction: boolean;
}

export type JobState = 'queued' | 'running' | 'paused' | 'cancelled' | 'done';
export type Verdict = 'confirmed' | 'disputed' | 'unsure' | 'answered';

export interface JobSummary {
  id: number;
  name: string;
  source: string;
  state: JobState;
  created_at: number;
  problems: number;
  samples_total: number;
  samples_done: number;
  has_key: boolean;
}

export interface ProblemStatus {
  idx: number;
  id: string;
  question: string;
  key: string | null;
  line: number;
  samples_done: number;
  samples_total: number;
  answers: (string | null)[];
  majority: string | null;
  agreement: number;
  verdict: Verdict | null;
}

export interface VerdictCounts {
  confirmed: number;
  disputed: number;
  unsure: number;
  answered: number;
  pending: number;
}

export interface JobTable {
  summary: JobSummary;
  options: JobOptions;
  problems: ProblemStatus[];
  counts: VerdictCounts;
  /** The problems' indices in the finished report's order. */
  report_order: number[];
  /** The file name to suggest for each export. */
  export_names: Record<ExportFormat, string>;
}

export interface SampleRow {
  problem_idx: number;
  sample_idx: number;
  answer: string;
  thinking: string;
  extracted: string | null;
  finish_reason: string;
  prompt_tokens: number;
  thinking_tokens: number;
  answer_tokens: number;
  ttft_ms: number;
  duration_ms: number;
}

export interface JobProgress {
  done: number;
  total: number;
  tokens_per_second: number;
  eta_seconds: number | null;
}

export type JobRunEvent =
  | { event: 'sample'; problem_idx: number; sample_idx: number; extracted: string | null; finish_reason: string }
  | ({ event: 'progress' } & JobProgress)
  | { event: 'delta'; problem_idx: number; sample_idx: number; channel: 'thinking' | 'answer'; text: string }
  | { event: 'restarted'; problem_idx: number; sample_idx: number }
  | { event: 'waiting'; reason: string | null };

/** Where a job runs. */
export type RunOn = 'local' | 'remote';

/** A job's events: the runner's, then `state` once it stops. */
export type JobUiEvent = JobRunEvent | { event: 'state'; state: JobState; error: string | null };

export type ExportFormat = 'csv' | 'jsonl' | 'markdown';

export const jobs = {
  preview: (path: string) => invoke<FilePreview>('preview_file', { path }),
  create: (path: string, options: JobOptions) => invoke<JobSummary>('create_job', { path, options }),
  list: () => invoke<JobSummary[]>('list_jobs'),
  table: (id: number) => invoke<JobTable>('job_table', { id }),
  samples: (id: number, problemIdx: number) => invoke<SampleRow[]>('problem_samples', { id, problemIdx }),
  run: (id: number, on: RunOn, onEvent: (e: JobUiEvent) => void) => {
    const channel = new Channel<JobUiEvent>();
    channel.onmessage = onEvent;
    return invoke<void>('run_job', { id, on, onEvent: channel });
  },
  pause: (id: number) => invoke<void>('pause_job', { id }),
  cancel: (id: number) => invoke<void>('cancel_job', { id }),
  remove: (id: number) => invoke<void>('delete_job', { id }),
  exportTo: (id: number, format: ExportFormat, path: string) => invoke<void>('export_job', { id, format, path }),
};

// ---- Remote engine ----

export const remote = {
  keyStored: () => invoke<boolean>('remote_key_stored'),
  /** Stores the key in the OS keyring; null or empty removes it. */
  setKey: (key: string | null) => invoke<void>('set_remote_key', { key }),
  /** The model jobs will use there, or why the engine cannot be reached. */
  check: () => invoke<string>('check_remote'),
};
