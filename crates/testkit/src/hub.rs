//! A stand-in for the Hugging Face hub on loopback, for download tests (set `HF_ENDPOINT` to
//! [`FakeHub::url`]): `GET /{repo}/resolve/main/{file}` with Range support for the files it was
//! given, 404 for anything else, slowly enough to cancel a transfer part-way.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct FakeHub {
    pub url: String,
    /// The start offset of every range asked for, in order.
    pub ranges: Arc<Mutex<Vec<usize>>>,
}

impl FakeHub {
    /// Serves each `(repo, file, bytes)`, 64 KiB every 5 ms.
    pub fn serve(files: Vec<(String, String, Arc<Vec<u8>>)>) -> FakeHub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("bound"));
        let ranges = Arc::new(Mutex::new(Vec::new()));
        let seen = ranges.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Ok(read_half) = stream.try_clone() else { continue };
                let mut reader = BufReader::new(read_half);
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let (mut range_start, mut range_end) = (0, None);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
                        let (a, b) = v.trim().split_once('-').unwrap_or((v.trim(), ""));
                        range_start = a.parse().unwrap_or(0);
                        range_end = b.parse::<usize>().ok();
                    }
                }
                let found = files.iter().find(|(repo, file, _)| request_line.contains(&format!("/{repo}/resolve/main/{file} ")));
                let Some((_, _, data)) = found else {
                    let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    continue;
                };
                seen.lock().unwrap().push(range_start);
                let size = data.len();
                let end = range_end.unwrap_or(size - 1).min(size - 1);
                let start = range_start.min(end);
                let body = &data[start..=end];
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Length: {}\r\nContent-Range: bytes {start}-{end}/{size}\r\n\
                     ETag: \"fake-etag-0001\"\r\nX-Repo-Commit: 0123456789abcdef0123456789abcdef01234567\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                if stream.write_all(head.as_bytes()).is_err() {
                    continue;
                }
                for chunk in body.chunks(64 << 10) {
                    if stream.write_all(chunk).is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        });
        FakeHub { url, ranges }
    }

    /// Serves every catalogue model's file as `bytes`.
    pub fn catalogue(bytes: Vec<u8>) -> FakeHub {
        let bytes = Arc::new(bytes);
        let files = ponder_engine::catalog::MODELS.iter().map(|m| (m.repo.to_string(), m.file.to_string(), bytes.clone()));
        Self::serve(files.collect())
    }
}
