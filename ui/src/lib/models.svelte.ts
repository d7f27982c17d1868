// The models Ponder offers and their downloads: the first-run screen and the settings share one
// controller, so a download started in one shows in the other. Rust owns the catalogue and the
// transfer; this mirrors them.
import { cancelDownload, downloadModel, modelCatalog, type CatalogEntry, type ModelStatus } from './api';
import { errorText } from './i18n.svelte';

export interface DownloadProgress {
  /** The catalogue model being fetched. */
  label: string;
  done: number;
  total: number;
  bytesPerSecond: number;
}

export class ModelsController {
  catalog = $state<CatalogEntry[]>([]);
  downloading = $state<DownloadProgress | null>(null);
  error = $state<string | null>(null);
  /** The last download was cancelled (it resumes when started again). */
  cancelled = $state(false);

  async refresh() {
    try {
      this.catalog = await modelCatalog();
    } catch {
      // The list is an offer, not a need: without it the screens still open models by file.
    }
  }

  /** Fetches a catalogue model (the default for a null id), or takes it from the cache, and
   * switches to it. Gives the new model status, or null when the download stopped (the reason
   * is in `error` or `cancelled`). */
  async download(id: string | null, fallbackLabel = ''): Promise<ModelStatus | null> {
    if (this.downloading) return null;
    // The catalogue lists the default first.
    const entry = id === null ? this.catalog[0] : this.catalog.find((e) => e.model.id === id);
    const label = entry ? entry.label : (id ?? fallbackLabel);
    this.error = null;
    this.cancelled = false;
    this.downloading = { label, done: 0, total: 0, bytesPerSecond: 0 };
    try {
      return await downloadModel(id, (e) => {
        if (e.event === 'started') this.downloading = { label, done: 0, total: e.total_bytes, bytesPerSecond: 0 };
        if (e.event === 'progress') this.downloading = { label, done: e.downloaded_bytes, total: e.total_bytes, bytesPerSecond: e.bytes_per_second };
      });
    } catch (e) {
      if (!this.cancelled) this.error = errorText(e);
      return null;
    } finally {
      this.downloading = null;
      await this.refresh();
    }
  }

  cancel() {
    this.cancelled = true;
    void cancelDownload();
  }
}
