//! The default model's download through hf-hub's real code, against a small stand-in for the
//! Hugging Face hub on loopback (HF_ENDPOINT), into a cache of its own (HF_HOME): progress,
//! cancel, resume from the partial file, and finding the model offline afterwards.

use ponder_engine::download::{self, Progress};
use ponder_engine::EngineError;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SIZE: usize = 3 << 20;

fn blob() -> Vec<u8> {
    (0..SIZE).map(|i| (i * 31 % 251) as u8).collect()
}

/// Serves `GET /{repo}/resolve/main/{file}` with Range support, slowly enough to cancel;
/// records the start offset of every range asked for.
fn fake_hub(ranges: Arc<Mutex<Vec<String>>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let data = blob();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let mut range = None;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
                    range = Some(v.trim().to_string());
                }
            }
            let expected = format!("/{}/resolve/main/{}", download::DEFAULT_REPO, download::DEFAULT_FILE);
            if !request_line.contains(&expected) {
                let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                continue;
            }
            let range = range.unwrap_or_else(|| "0-".into());
            ranges.lock().unwrap().push(range.clone());
            let (start, end) = match range.split_once('-') {
                Some((a, "")) => (a.parse::<usize>().unwrap(), SIZE - 1),
                Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                None => (0, SIZE - 1),
            };
            let body = &data[start..=end];
            let head = format!(
                "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {start}-{end}/{SIZE}\r\n\
                 ETag: \"fake-etag-0001\"\r\nX-Repo-Commit: 0123456789abcdef0123456789abcdef01234567\r\nConnection: close\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes()).unwrap();
            for chunk in body.chunks(64 << 10) {
                if stream.write_all(chunk).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    });
    format!("http://{addr}")
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
    let ranges = Arc::new(Mutex::new(Vec::new()));
    std::env::set_var("HF_HOME", home.path());
    std::env::set_var("HF_ENDPOINT", fake_hub(ranges.clone()));
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
    let resumed_from: usize = ranges.lock().unwrap().last().unwrap().trim_end_matches('-').parse().unwrap();
    assert!(resumed_from >= 1 << 20, "resumed from byte {resumed_from}, ranges {:?}", ranges.lock().unwrap());

    // Once cached it is found without the hub, and downloading again does nothing.
    std::env::set_var("HF_ENDPOINT", "http://127.0.0.1:9");
    assert_eq!(download::cached_default_model(), Some(path.clone()));
    assert_eq!(download::download_default_model(Seen::default()).unwrap(), path);
}
