// Generated from Ponder's Rust types by src-tauri/src/core/bindings.rs: run `make bindings`
// after changing one of them. Do not edit by hand.

export type ModelInfo = { name: string, path: string, architecture: string, 
/**
 * The most common weight type, e.g. `Q4K`.
 */
quantization: string, file_size: number, context_length: number, parameters: number, reasoning: boolean, 
/**
 * How the model thinks: never, always (R1), or by request (Qwen3).
 */
thinking: Thinking, 
/**
 * Which of Ponder's kernels multiply the weights on this computer (the CPU's fastest, or
 * the one `PONDER_CPU_KERNEL` names); `None` where candle's do: weights in none of Q4_K,
 * Q6_K, Q8_0, Q5_0 and Q4_0, or a load that asked for candle's.
 */
kernel: Kernel | null, };

export type Thinking = "never" | "always" | "switchable";

export type Kernel = "reference" | "avx2" | "avx512" | "amx";

export type LoadProgress = { done_bytes: number, total_bytes: number, };

export type EngineStats = { running: number, paused: number, waiting: number, kv_tokens_used: number, kv_tokens_budget: number, 
/**
 * Generated tokens per second over the last few seconds, all sequences together.
 */
tokens_per_second: number, total_generated: number, 
/**
 * Tokens fed through the model, prompts, generated tokens and drafts alike: how far
 * prompts have been read.
 */
total_fed: number, 
/**
 * Tokens drafted for speculative decoding and verified, and how many of them the model
 * agreed with (see `speculate`).
 */
total_drafted: number, total_accepted: number, };

export type Channel = "thinking" | "answer";

export type ModelStatus = { "state": "missing", default_model: string, } | { "state": "ready", info: ModelInfo, } | { "state": "invalid", path: string, error: CommandError, default_model: string, };

export type DownloadEvent = { "event": "started", total_bytes: number, } | { "event": "progress", downloaded_bytes: number, total_bytes: number, bytes_per_second: number, } | { "event": "finished", path: string, } | { "event": "failed", error: CommandError, };

export type CatalogModel = { 
/**
 * Short name for `ponder models pull NAME` and the app's settings.
 */
id: string, display_name: string, repo: string, file: string, 
/**
 * The file's size, rounded: the hub gives the exact figure when the download starts.
 */
approx_bytes: number, 
/**
 * Memory the machine should have to run it with a few thousand tokens of context.
 */
min_ram_gb: number, family: Family, thinking: Thinking, 
/**
 * What it is good at, in a sentence (the app shows its own translation by `id`).
 */
good_for: string, };

export type Family = "qwen2" | "qwen3" | "llama";

export type CatalogEntry = { model: CatalogModel, 
/**
 * How the window names it: "Qwen3-4B (Q4_K_M, 2.5 GB)".
 */
label: string, 
/**
 * Where it is in the Hugging Face cache, once downloaded.
 */
downloaded: string | null, 
/**
 * It is the model the app uses now.
 */
current: boolean, };

export type Source = "hugging_face" | "lm_studio" | "ollama" | "folder";

export type LocalModel = { path: string, source: Source, 
/**
 * The repository, Ollama's `model:tag`, or the folder it was found in.
 */
origin: string, file_size: number, 
/**
 * What the file holds, when Ponder can run it.
 */
info: ModelInfo | null, 
/**
 * Why Ponder cannot run it (an architecture it does not know, a split file, a damaged
 * header).
 */
problem: CommandError | null, 
/**
 * It is the model the app uses now.
 */
current: boolean, };

export type EngineStatus = { "state": "empty" } | { "state": "loading", path: string, progress: LoadProgress | null, } | { "state": "ready", model: ModelInfo, stats: EngineStats, } | { "state": "failed", path: string, error: CommandError, };

export type Language = "en" | "zh-CN";

export type Theme = "light" | "dark" | "system";

export type KvCacheType = "f16" | "q8_0";

export type Settings = { 
/**
 * A GGUF file or model folder; `None` means the downloaded default model.
 */
model_path: string | null, 
/**
 * Folders of GGUF files the user added to the Models list (besides the Hugging Face cache,
 * LM Studio's and Ollama's, which are always searched).
 */
model_folders: Array<string>, 
/**
 * CPU threads for the engine (applies at the next start).
 */
threads: number, 
/**
 * Sequences the engine decodes at once.
 */
max_sequences: number, 
/**
 * Longest context a conversation may use, in tokens.
 */
context_size: number, 
/**
 * How the engine's KV cache stores keys and values (applies at the next start).
 */
kv_cache: KvCacheType, 
/**
 * Let a chat that runs alone guess its next tokens from text it has already seen, and check
 * the guesses in one step: replies come faster, word for word the same when greedy.
 */
speculative_decoding: boolean, 
/**
 * A small model with the same vocabulary that makes those guesses instead (applies at the
 * next start). It pays when it is several times cheaper than the model, e.g. a 1.5B for a
 * 7B; `None` guesses from the text alone.
 */
draft_model_path: string | null, temperature: number, top_p: number, max_tokens: number, 
/**
 * Close the thought after this many tokens; `None` lets the model think as long as it likes.
 */
thinking_budget: number | null, server_enabled: boolean, server_port: number, 
/**
 * A key the local API server asks for (`Authorization: Bearer …`); `None` asks none.
 */
server_api_key: string | null, 
/**
 * A remote OpenAI-compatible server for big jobs (its API root, e.g.
 * `http://gpu-box:8000/v1`); its key lives in the OS keyring, never here.
 */
remote_url: string | null, 
/**
 * The remote model's name; `None` takes the server's first.
 */
remote_model: string | null, language: Language, theme: Theme, };

export type ServerStatus = { "state": "off" } | { "state": "starting", port: number, } | { "state": "on", port: number, url: string, } | { "state": "failed", port: number, error: CommandError, };

export type Conversation = { id: number, title: string, updated_at: number, 
/**
 * The conversation's *Think* switch: `None` follows the model (on for reasoning models).
 * Only models whose template has the switch (Qwen3) are affected.
 */
thinking: boolean | null, };

export type Role = "user" | "assistant";

export type ReplyStats = { time_to_first_token_s: number | null, tokens_per_second: number, thinking_tokens: number, answer_tokens: number, thinking_seconds: number | null, };

export type ChatMessage = { id: number, conversation_id: number, role: Role, 
/**
 * The answer (for a reply) or the question.
 */
content: string, thinking: string, 
/**
 * `None` while a reply is being written (or when the app stopped while it was).
 */
finish_reason: string | null, stats: ReplyStats | null, };

export type ChatEvent = { "event": "started", prompt_tokens: number, } | { "event": "delta", channel: Channel, text: string, } | { "event": "finished", message: ChatMessage, error: CommandError | null, };

export type Sent = { question: ChatMessage, reply: ChatMessage, };

export type Problem = { 
/**
 * From the file's id column, or the problem's position (1-based).
 */
id: string, question: string, key: string | null, 
/**
 * Other columns, carried to the export.
 */
extra: Array<[string, string]>, 
/**
 * Where it starts in the file (line, or row for spreadsheets).
 */
line: number, };

export type Format = "text" | "markdown" | "csv" | "tsv" | "jsonl" | "json" | "xlsx";

export type Columns = { question: string | null, key: string | null, id: string | null, extra: Array<string>, };

export type WarningCode = "no_question_field" | "empty_entry" | "empty_question" | "duplicate_id" | "long_question" | "uncertain_encoding";

export type Warning = { line: number, 
/**
 * What kind of thing, stable across versions, for a translation.
 */
code: WarningCode, 
/**
 * The values the message names.
 */
params: { [key in string]: string }, 
/**
 * In English.
 */
message: string, };

export type FilePreview = { path: string, name: string, format: Format, encoding: string, problem_count: number, 
/**
 * The first few problems.
 */
problems: Array<Problem>, has_key: boolean, columns: Columns, 
/**
 * The first warnings (`reader::WARNINGS_KEPT`), and how many more there are.
 */
warnings: Array<Warning>, more_warnings: number, 
/**
 * Samples per problem to start with: two to validate a key (with a budget, below), one to
 * just answer.
 */
suggested_samples: number, 
/**
 * The sample budget to suggest (`JobOptions::suggested_budget`), if any.
 */
suggested_max_samples: number | null, };

export type JobOptions = { 
/**
 * Samples per problem (4 for validating keys, 1 for plain answering).
 */
samples: number, max_tokens: number, thinking_budget: number | null, temperature: number, top_p: number, seed: number | null, 
/**
 * Add the "reason step by step, answer in \boxed{}" instruction.
 */
math_instruction: boolean, 
/**
 * A sample budget instead of a fixed count: each problem starts with `samples` and draws
 * more, up to this many, while its verdict is unsure (`samples_wanted`).
 */
max_samples: number | null, 
/**
 * Thinking on or off, for models whose template has the switch (Qwen3); `None` leaves the
 * model's default. R1 models always think and non-reasoning models never do.
 */
thinking: boolean | null, };

export type JobState = "queued" | "running" | "paused" | "cancelled" | "done";

export type JobSummary = { id: number, name: string, source: string, state: JobState, created_at: number, problems: number, samples_total: number, samples_done: number, has_key: boolean, };

export type SampleRow = { problem_idx: number, sample_idx: number, answer: string, thinking: string, extracted: string | null, finish_reason: string, prompt_tokens: number, thinking_tokens: number, answer_tokens: number, ttft_ms: number, duration_ms: number, };

export type Verdict = "confirmed" | "disputed" | "unsure" | "answered";

export type UnsureReason = "no_answer" | "most_cut_off" | "split" | "key_reproduced" | "too_few_agree" | "too_slow_to_compare";

export type Found = "boxed" | "phrase" | "last_math" | "whole" | "last_number";

export type Rule = "percent" | "percent_as_number" | "plus_minus" | "intervals" | "sets" | "several" | "tuples" | "brackets" | "unions" | "matrices" | "one_element" | "relations" | "formula" | "words" | "word_against_maths" | "kinds" | "values" | "units" | "text" | "too_large" | "timed_out";

export type Check = { equal: boolean, 
/**
 * The answer found in the key, and where it was found.
 */
gold: string, gold_found: Found, pred: string, pred_found: Found, 
/**
 * Each side as read, after labels and units are dropped (`None`: not maths, so compared as
 * text).
 */
gold_read: string | null, pred_read: string | null, 
/**
 * The rule that decided.
 */
rule: Rule, };

export type ProblemStatus = { idx: number, id: string, question: string, key: string | null, line: number, samples_done: number, samples_total: number, 
/**
 * Extracted answers of the finished samples, in sample order.
 */
answers: Array<string | null>, majority: string | null, agreement: number, 
/**
 * `None` until every sample of the problem is done.
 */
verdict: Verdict | null, 
/**
 * Why a finished problem is unsure.
 */
reason: UnsureReason | null, 
/**
 * Finished samples that reached the token limit before they gave an answer.
 */
cut_off: number, 
/**
 * For a disputed or unsure key: how the key and the most common answer were read, and the
 * rule that found them different, so a teacher sees why.
 */
check: Check | null, };

export type VerdictCounts = { confirmed: number, disputed: number, unsure: number, answered: number, 
/**
 * Problems with samples still to run.
 */
pending: number, 
/**
 * Finished samples, and those of them cut off at the token limit before they answered.
 */
samples_done: number, cut_off: number, 
/**
 * Enough were cut off that the user should raise the token limit (`many_cut_off`).
 */
many_cut_off: boolean, };

export type ExportFormat = "csv" | "jsonl" | "markdown";

export type ExportNames = { csv: string, jsonl: string, markdown: string, 
/**
 * The report as one HTML file, which the window renders (`JobReport`).
 */
html: string, };

export type JobTable = { summary: JobSummary, options: JobOptions, problems: Array<ProblemStatus>, counts: VerdictCounts, 
/**
 * The problems' indices in the finished report's order (`ponder_jobs::report`).
 */
report_order: Array<number>, 
/**
 * The file name to suggest for each export.
 */
export_names: ExportNames, };

export type JobReport = { title: string, table: JobTable, shown: Array<ShownSample>, };

export type ShownSample = { problem_idx: number, sample_idx: number, answer: string, thinking: string, };

export type JobProgress = { done: number, total: number, tokens_per_second: number, eta_seconds: number | null, };

export type JobRunEvent = { "event": "sample", problem_idx: number, sample_idx: number, extracted: string | null, finish_reason: string, } | { "event": "progress" } & JobProgress | { "event": "delta", problem_idx: number, sample_idx: number, channel: Channel, text: string, } | { "event": "restarted", problem_idx: number, sample_idx: number, } | { "event": "waiting", reason: string | null, };

export type JobStopped = { "event": "state", state: JobState, error: CommandError | null, };

export type JobUiEvent = JobRunEvent | JobStopped;

export type RunOn = "local" | "remote";

export type CommandError = { 
/**
 * Stable across versions: `read.too_large`, `model.not_gguf`, … (`app` for the app's own
 * messages, which have no translation yet).
 */
code: string, 
/**
 * The values the message names: a path, a line, a limit.
 */
params: { [key in string]: string }, 
/**
 * The English message.
 */
message: string, };

/** The question-file extensions (`ponder_jobs::reader::EXTENSIONS`). */
export const QUESTION_EXTENSIONS: string[] = ["txt","md","csv","tsv","jsonl","json","xlsx"];
