//! What a remote server can make a job do, against a loopback stub that answers as told: a
//! `Retry-After` of an hour is waited for a bounded time, an endless line or reply is refused, a
//! 400 is the problem's result.

use ponder_jobs::reader::Problem;
use ponder_jobs::remote::{RemoteBackend, RemoteConfig};
use ponder_jobs::runner::{run_job, JobControl};
use ponder_jobs::{JobOptions, JobState, Store};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the stub sends for the nth chat request (from 0).
type Answer = fn(usize, &mut TcpStream);

fn stub(answer: Answer) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let chats = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let chats = chats.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let (mut first, mut len) = (String::new(), 0usize);
                reader.read_line(&mut first).unwrap();
                loop {
                    let mut h = String::new();
                    reader.read_line(&mut h).unwrap();
                    if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                    if h == "\r\n" || h.is_empty() {
                        break;
                    }
                }
                let mut body = vec![0; len];
                reader.read_exact(&mut body).unwrap();
                if first.contains("/models") {
                    let m = r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#;
                    let _ = write!(
                        conn,
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{m}",
                        m.len()
                    );
                } else {
                    answer(chats.fetch_add(1, Ordering::SeqCst), &mut conn);
                }
            });
        }
    });
    port
}

fn sse_head(conn: &mut TcpStream) {
    let _ = write!(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
}

fn chunk(text: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or("null".to_string(), |f| format!("\"{f}\""));
    format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}},\"finish_reason\":{finish}}}]}}\n\n",
        serde_json::to_string(text).unwrap()
    )
}

/// Runs a one-problem job on the stub; the outcome, or `None` if it did not end in 60 s.
fn run_on(port: u16, config: impl FnOnce(RemoteConfig) -> RemoteConfig) -> (Option<Result<JobState, String>>, Store) {
    let dir = tempfile::tempdir().unwrap().keep();
    let db = dir.join("jobs.sqlite");
    let mut store = Store::open(&db).unwrap();
    let problem = Problem { id: "p".into(), question: "What is 2 + 2?".into(), key: Some("4".into()), extra: vec![], line: 2 };
    let job = store.create_job("t", "t", &JobOptions { samples: 1, max_tokens: 64, ..Default::default() }, &[problem]).unwrap();
    let config = config(RemoteConfig {
        max_backoff: Duration::from_millis(50),
        ..RemoteConfig::new(format!("http://127.0.0.1:{port}/v1"))
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let store = Store::open(&db).unwrap();
        let backend = RemoteBackend::connect(config).unwrap();
        let _ = tx.send(run_job(&store, job, &backend, &JobControl::default(), |_| {}).map_err(|e| e.to_string()));
    });
    (rx.recv_timeout(Duration::from_secs(60)).ok(), store)
}

#[test]
fn an_hour_of_retry_after_is_capped() {
    let port = stub(|n, conn| {
        if n == 0 {
            let _ = write!(conn, "HTTP/1.1 429 Too Many\r\nRetry-After: 3600\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        } else {
            sse_head(conn);
            let _ = write!(conn, "{}{}data: [DONE]\n\n", chunk("It is \\boxed{4}.", None), chunk("", Some("stop")));
        }
    });
    let (outcome, store) = run_on(port, |c| RemoteConfig { max_retry_after: Duration::from_millis(300), ..c });
    assert_eq!(outcome, Some(Ok(JobState::Done)), "the job waited out the cap, not the hour");
    assert_eq!(store.samples(1).unwrap()[0].extracted.as_deref(), Some("4"));
}

#[test]
fn an_endless_line_or_reply_is_refused_not_kept() {
    let line = stub(|_, conn| {
        sse_head(conn);
        let _ = conn.write_all(b"data: ");
        let block = vec![b'x'; 1 << 16];
        for _ in 0..40 {
            if conn.write_all(&block).is_err() {
                return;
            }
        }
    });
    let (outcome, store) = run_on(line, |c| c);
    let e = outcome.expect("the job ended").unwrap_err();
    assert!(e.contains("paused") && e.contains("longer than 1048576 bytes"), "{e}");
    assert!(store.samples(1).unwrap().is_empty(), "nothing of it is stored");

    let endless = stub(|_, conn| {
        sse_head(conn);
        for _ in 0..100_000 {
            if conn.write_all(chunk("and so on, ", None).as_bytes()).is_err() {
                return;
            }
        }
    });
    let (outcome, _) = run_on(endless, |c| c);
    let e = outcome.expect("the job ended").unwrap_err();
    assert!(e.contains("runs past") && e.contains("more than 64 tokens can hold"), "{e}");
}

#[test]
fn a_400_is_the_problems_result_and_credentials_never_show() {
    let port = stub(|_, conn| {
        let m = r#"{"error":{"message":"prompt too long"}}"#;
        let _ = write!(conn, "HTTP/1.1 400 Bad Request\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{m}", m.len());
    });
    let (outcome, store) = run_on(port, |c| RemoteConfig { base_url: format!("http://alice:s3cret@127.0.0.1:{port}/v1"), ..c });
    assert_eq!(outcome, Some(Ok(JobState::Done)));
    let sample = &store.samples(1).unwrap()[0];
    let why = ponder_jobs::report::refusal(&sample.finish_reason).expect("a refusal");
    assert!(why.contains("HTTP 400") && why.contains("prompt too long"), "{why}");
    assert!(why.contains("http://***@127.0.0.1") && !why.contains("s3cret"), "{why}");
}
