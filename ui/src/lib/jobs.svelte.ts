// The batch jobs' window state: previews of dropped files, the job list, the open job's table,
// and live progress and text of running jobs. Rust owns jobs, verdicts and files; this mirrors
// them and applies stream events.
import { jobs, type RunOn, type ExportFormat, type FilePreview, type JobOptions, type JobProgress, type JobSummary, type JobTable,
  type JobUiEvent, type ProblemStatus, type SampleRow } from './api';
import { errorText } from './i18n.svelte';
import { cadenced } from './cadence';

export type RowState = 'queued' | 'thinking' | 'answered' | 'confirmed' | 'disputed' | 'unsure';

/** A problem's state in the table: its verdict once complete, else whether it is running. */
export function rowState(p: ProblemStatus, running: boolean): RowState {
  if (p.verdict) return p.verdict;
  return running ? 'thinking' : 'queued';
}

export interface PreviewItem {
  path: string;
  preview: FilePreview | null;
  error: string | null;
}

export interface LiveSample {
  thinking: string;
  answer: string;
}

const liveKey = (job: number, problem: number, sample: number) => `${job}:${problem}:${sample}`;

export class JobsController {
  list = $state<JobSummary[]>([]);
  previews = $state<PreviewItem[]>([]);
  selectedId = $state<number | null>(null);
  table = $state<JobTable | null>(null);
  progress = $state<Record<number, JobProgress>>({});
  running = $state<Record<number, boolean>>({});
  /** Text of samples being written, by job:problem:sample. */
  live = $state<Record<string, LiveSample>>({});
  selectedProblem = $state<number | null>(null);
  samples = $state<SampleRow[]>([]);
  error = $state<string | null>(null);
  /** Where each job last ran. */
  runOn = $state<Record<number, RunOn>>({});
  /** Why a running job waits (its remote engine is down), by job. */
  waiting = $state<Record<number, string | null>>({});

  async refresh() {
    this.list = await jobs.list();
  }

  async addFiles(paths: string[]) {
    this.error = null;
    const fresh = paths.filter((p) => !this.previews.some((x) => x.path === p));
    const items = await Promise.all(fresh.map(async (path): Promise<PreviewItem> => {
      try {
        return { path, preview: await jobs.preview(path), error: null };
      } catch (e) {
        return { path, preview: null, error: errorText(e) };
      }
    }));
    this.previews = [...this.previews, ...items];
  }

  removePreview(path: string) {
    this.previews = this.previews.filter((p) => p.path !== path);
  }

  /** Creates a job for every readable previewed file and starts them. */
  async start(options: JobOptions, on: RunOn = 'local') {
    this.error = null;
    const ready = this.previews.filter((p) => p.preview);
    try {
      let first: number | null = null;
      for (const item of ready) {
        const job = await jobs.create(item.path, options);
        first ??= job.id;
        await this.attach(job.id, on);
      }
      // Files that could not be read have been seen; they go with the rest.
      this.previews = [];
      await this.refresh();
      if (first !== null) await this.select(first);
    } catch (e) {
      this.error = errorText(e);
    }
  }

  /** Runs, resumes, or listens to a running job. */
  async attach(id: number, on: RunOn = this.runOn[id] ?? 'local') {
    this.running[id] = true;
    this.runOn[id] = on;
    try {
      // Live text is shown together (see cadence.ts): a batch's samples send about 150 deltas a second.
      await jobs.run(id, on, cadenced((e: JobUiEvent) => this.apply(id, e), (e) => e.event === 'delta'));
    } catch (e) {
      this.running[id] = false;
      this.error = errorText(e);
    }
  }

  async select(id: number) {
    this.selectedId = id;
    this.selectedProblem = null;
    this.samples = [];
    const table = await jobs.table(id);
    if (this.selectedId === id) this.table = table;
  }

  async selectProblem(idx: number | null) {
    this.selectedProblem = idx;
    this.samples = idx === null || this.selectedId === null ? [] : await jobs.samples(this.selectedId, idx);
  }

  liveSamples(job: number, problem: number): [number, LiveSample][] {
    const prefix = `${job}:${problem}:`;
    return Object.entries(this.live)
      .filter(([k]) => k.startsWith(prefix))
      .map(([k, v]) => [Number(k.slice(prefix.length)), v] as [number, LiveSample])
      .sort((a, b) => a[0] - b[0]);
  }

  isProblemRunning(job: number, problem: number): boolean {
    const prefix = `${job}:${problem}:`;
    return Object.keys(this.live).some((k) => k.startsWith(prefix));
  }

  pause = (id: number) => jobs.pause(id);
  cancel = async (id: number) => {
    await jobs.cancel(id);
    if (!this.running[id]) await this.reload(id);
  };

  async remove(id: number) {
    try {
      await jobs.remove(id);
      if (this.selectedId === id) {
        this.selectedId = null;
        this.table = null;
      }
      await this.refresh();
    } catch (e) {
      this.error = errorText(e);
    }
  }

  async exportTo(format: ExportFormat, path: string) {
    if (this.selectedId !== null) await jobs.exportTo(this.selectedId, format, path);
  }

  private apply(id: number, e: JobUiEvent) {
    switch (e.event) {
      case 'progress':
        this.progress[id] = { done: e.done, total: e.total, tokens_per_second: e.tokens_per_second, eta_seconds: e.eta_seconds };
        break;
      case 'delta': {
        const key = liveKey(id, e.problem_idx, e.sample_idx);
        const s = (this.live[key] ??= { thinking: '', answer: '' });
        if (e.channel === 'thinking') s.thinking += e.text;
        else s.answer += e.text;
        break;
      }
      case 'restarted':
        delete this.live[liveKey(id, e.problem_idx, e.sample_idx)];
        break;
      case 'waiting':
        this.waiting[id] = e.reason;
        break;
      case 'sample':
        delete this.live[liveKey(id, e.problem_idx, e.sample_idx)];
        this.scheduleReload(id, e.problem_idx);
        break;
      case 'state':
        this.running[id] = false;
        this.waiting[id] = null;
        for (const k of Object.keys(this.live)) if (k.startsWith(`${id}:`)) delete this.live[k];
        if (e.error) this.error = errorText(e.error);
        void this.reload(id);
        break;
    }
  }

  // Finished samples change the table; reloading it at most once a second keeps a fast job
  // from flooding the window.
  private pending = new Map<number, Set<number>>();
  private scheduleReload(id: number, problem: number) {
    const waiting = this.pending.get(id);
    if (waiting) {
      waiting.add(problem);
      return;
    }
    this.pending.set(id, new Set([problem]));
    setTimeout(() => {
      const problems = this.pending.get(id)!;
      this.pending.delete(id);
      void this.reload(id, problems);
    }, 1000);
  }

  private async reload(id: number, problems?: Set<number>) {
    await this.refresh();
    if (this.selectedId !== id) return;
    this.table = await jobs.table(id);
    if (this.selectedProblem !== null && (!problems || problems.has(this.selectedProblem))) {
      this.samples = await jobs.samples(id, this.selectedProblem);
    }
  }
}
