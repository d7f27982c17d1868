// The one place the UI talks to Rust. Components call these functions, never `invoke` directly,
// so tests can mock the IPC at a single seam. The types are generated from Rust's
// (`bindings.ts`, `make bindings`), never written here.
import { Channel, invoke } from '@tauri-apps/api/core';
import type { CatalogEntry, ChatEvent, ChatMessage, CommandError, Conversation, DownloadEvent, EngineStatus, ExportFormat, FilePreview, JobOptions,
  JobReport, JobSummary, JobTable, JobUiEvent, LocalModel, ModelStatus, SampleRow, Sent, ServerStatus, Settings, RunOn } from './bindings';

export type * from './bindings';

export function modelStatus(): Promise<ModelStatus> {
  return invoke<ModelStatus>('model_status');
}

export function openModel(path: string): Promise<ModelStatus> {
  return invoke<ModelStatus>('open_model', { path });
}

/** The models Ponder offers (the default first), and which are downloaded. */
export function modelCatalog(): Promise<CatalogEntry[]> {
  return invoke<CatalogEntry[]>('model_catalog');
}

/** GGUF files on this computer: the Hugging Face cache, LM Studio, Ollama, and the user's folders. */
export const localModels = {
  list: () => invoke<LocalModel[]>('local_models'),
  use: (path: string) => invoke<ModelStatus>('use_local_model', { path }),
  addFolder: (title: string) => invoke<string[]>('add_model_folder', { title }),
  removeFolder: (path: string) => invoke<string[]>('remove_model_folder', { path }),
};

/** Downloads a catalogue model (the default for null), resuming a partial download, and switches to it. */
export function downloadModel(id: string | null, onEvent: (e: DownloadEvent) => void): Promise<ModelStatus> {
  const channel = new Channel<DownloadEvent>();
  channel.onmessage = onEvent;
  return invoke<ModelStatus>('download_model', { id, onEvent: channel });
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
  /** Writes a document the window made (a report as HTML) to a path a save dialog granted. */
  saveDocument: (path: string, contents: string) => invoke<void>('save_document', { path, contents }),
  /** Opens the system's print dialog for a whole document the window made. */
  printDocument: (html: string, title: string) => invoke<void>('print_document', { html, title }),
};

// ---- Settings ----

export function getSettings(): Promise<Settings> {
  return invoke<Settings>('get_settings');
}

export function saveSettings(settings: Settings): Promise<Settings> {
  return invoke<Settings>('save_settings', { settings });
}

// ---- Engine ----

export function engineStatus(): Promise<EngineStatus> {
  return invoke<EngineStatus>('engine_status');
}

// ---- Chat ----

function chatChannel(onEvent: (e: ChatEvent) => void): Channel<ChatEvent> {
  const channel = new Channel<ChatEvent>();
  channel.onmessage = onEvent;
  return channel;
}

export const chat = {
  list: (query = '') => invoke<Conversation[]>('list_conversations', { query }),
  create: () => invoke<Conversation>('create_conversation'),
  rename: (id: number, title: string) => invoke<void>('rename_conversation', { id, title }),
  /** The conversation's Think switch; null follows the model. */
  setThinking: (id: number, thinking: boolean | null) => invoke<Conversation>('set_conversation_thinking', { id, thinking }),
  remove: (id: number) => invoke<void>('delete_conversation', { id }),
  messages: (conversationId: number) => invoke<ChatMessage[]>('get_messages', { conversationId }),
  /** Writes the conversation as Markdown to a path a save dialog granted. */
  exportMarkdown: (id: number, path: string, withThinking: boolean) => invoke<void>('export_conversation', { id, path, withThinking }),
  send: (conversationId: number, content: string, onEvent: (e: ChatEvent) => void) =>
    invoke<Sent>('send_message', { conversationId, content, onEvent: chatChannel(onEvent) }),
  regenerate: (conversationId: number, onEvent: (e: ChatEvent) => void) =>
    invoke<ChatMessage>('regenerate', { conversationId, onEvent: chatChannel(onEvent) }),
  editAndResend: (messageId: number, content: string, onEvent: (e: ChatEvent) => void) =>
    invoke<ChatMessage>('edit_and_resend', { messageId, content, onEvent: chatChannel(onEvent) }),
  stop: (conversationId: number) => invoke<void>('stop_reply', { conversationId }),
};

// ---- Local API server ----

export function serverStatus(): Promise<ServerStatus> {
  return invoke<ServerStatus>('server_status');
}

// ---- Batch jobs ----

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
  /** What the shareable report shows (the window renders it: `reportHtml.ts`). */
  report: (id: number) => invoke<JobReport>('job_report', { id }),
};

// ---- Remote engine ----

/** What the app has to say about its launch (a store moved aside), each once. */
export function takeNotices() {
  return invoke<CommandError[]>('take_notices');
}

export const remote = {
  keyStored: () => invoke<boolean>('remote_key_stored'),
  /** Stores the key in the OS keyring; null or empty removes it. */
  setKey: (key: string | null) => invoke<void>('set_remote_key', { key }),
  /** The model jobs will use there, or why the engine cannot be reached. */
  check: () => invoke<string>('check_remote'),
};
