//! Catalogue models' downloads through hf-hub's real code, against a small stand-in for the
//! Hugging Face hub on loopback (HF_ENDPOINT), into a cache of its own (HF_HOME): progress,
//! cancel, resume from the partial file, and finding the model offline afterwards.

use ponder_engine::catalog;
use ponder_engine::download::{self, Progress};
use ponder_engine::EngineError;
use ponder_testkit::hub::FakeHub;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

const SIZE: usize = 3 << 20;

fn blob() -> Vec<u8> {
    (0..SIZE).map(|i| (i * 31 % 251) as u8).collect()
}

#[derive(Clone, Default)]
struct Seen {
    total: Arc<Mutex<u64>>,
    done: Arc<Mutex<u64>>,
    cancel_after: Option<u64>,
    finished: Arc<AtomicBool>,
}

impl Progress for Seen {
    fn start(&mut self, total_bytes: u64) {
        *self.total.lock().unwrap() = total_bytes;
        *self.done.lock().unwrap() = 0;
    }
    fn advance(&mut self, bytes: u64) {
        *self.done.lock().unwrap() += bytes;
    }
    fn finish(&mut self) {
        self.finished.store(true, Ordering::Relaxed);
    }
    fn cancelled(&self) -> bool {
        self.cancel_after.is_some_and(|n| *self.done.lock().unwrap() >= n)
    }
}

#[test]
fn download_reports_progress_cancels_resumes_and_is_then_found_offline() {
    let home = tempfile::tempdir().unwrap();
    let hub = FakeHub::catalogue(blob());
    std::env::set_var("HF_HOME", home.path());
    std::env::set_var("HF_ENDPOINT", &hub.url);
    assert_eq!(download::cached_default_model(), None);

    // Cancelled after a megabyte: an error that says so, and a partial file kept.
    let first = Seen { cancel_after: Some(1 << 20), ..Default::default() };
    let err = download::download_default_model(first.clone()).unwrap_err();
    assert!(matches!(err, EngineError::DownloadCancelled), "{err}");
    assert_eq!(*first.total.lock().unwrap(), SIZE as u64);
    let kept = *first.done.lock().unwrap();
    assert!(kept >= 1 << 20 && kept < SIZE as u64, "{kept}");
    assert_eq!(download::cached_default_model(), None);

    // Started again: it asks only for the rest, and the file is whole.
    let second = Seen::default();
    let path = download::download_default_model(second.clone()).unwrap();
    assert!(second.finished.load(Ordering::Relaxed));
    assert_eq!(*second.done.lock().unwrap(), SIZE as u64, "progress counts the whole file");
    assert_eq!(std::fs::read(&path).unwrap(), blob());
    let resumed_from = *hub.ranges.lock().unwrap().last().unwrap();
    assert!(resumed_from >= 1 << 20, "resumed from byte {resumed_from}, ranges {:?}", hub.ranges.lock().unwrap());

    // Once cached it is found without the hub, and downloading again does nothing.
    std::env::set_var("HF_ENDPOINT", "http://127.0.0.1:9");
    assert_eq!(download::cached_default_model(), Some(path.clone()));
    assert_eq!(download::download_default_model(Seen::default()).unwrap(), path);

    // Another catalogue model goes to its own repository's folder in the same cache, and the
    // default stays where it was.
    std::env::set_var("HF_ENDPOINT", &hub.url);
    let qwen3 = catalog::find("qwen3-1.7b").unwrap();
    assert_eq!(download::cached(qwen3), None);
    let other = download::download(qwen3, Seen::default()).unwrap();
    assert_ne!(other, path);
    assert!(other.ends_with(qwen3.file), "{}", other.display());
    assert!(other.to_string_lossy().contains("models--unsloth--Qwen3-1.7B-GGUF"), "{}", other.display());
    assert_eq!(download::cached(qwen3), Some(other));
    assert_eq!(download::cached_default_model(), Some(path));
}
