//! `ponder run --remote`: a keyed job on a second `ponder serve` (real 0.5B model) standing in
//! for a vLLM cluster. The server is killed mid-job and restarted (the job waits, then ends
//! complete: nothing lost or repeated), a loopback stub in front of it answers 429 and 503
//! (retried), and a wrong key is a clear error.

mod common;

use common::{count_samples, free_port, keyed_csv, ponder, samples, serve};
use ponder_testkit::small_model;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn run_remote(csv: &Path, db: &Path, url: &str, key: &str) -> Command {
    let mut c = ponder();
    c.args(["run"]).arg(csv);
    c.args([
        "--remote",
        url,
        "--api-key",
        key,
        "--samples",
        "2",
        "--max-tokens",
        "64",
        "--concurrency",
        "4",
        "--temperature",
        "0",
    ]);
    c.arg("--store").arg(db).arg("-o").arg(db.with_extension("results.jsonl"));
    c
}

fn assert_complete(db: &Path, problems: usize) {
    let all = samples(db);
    assert_eq!(all.len(), problems * 2, "every sample of every problem");
    let mut keys: Vec<(i64, i64)> = all.iter().map(|s| (s.0, s.1)).collect();
    keys.dedup();
    assert_eq!(keys.len(), problems * 2, "none twice");
    let rows = std::fs::read_to_string(db.with_extension("results.jsonl")).unwrap();
    assert_eq!(rows.lines().count(), problems);
    assert!(all.iter().all(|s| !s.2.is_empty()), "every sample has an answer text");
}

#[test]
fn a_keyed_job_runs_on_a_remote_server_and_survives_its_restart() {
    let d = tempfile::tempdir().unwrap();
    let model = small_model();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let csv = keyed_csv(d.path(), 6);
    let db = d.path().join("jobs.sqlite");

    // A wrong key is refused before any work is sent.
    let server = serve(&model, port, &["--api-key", "right-key"]);
    let out = run_remote(&csv, &db, &url, "wrong-key").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the server refused the API key (401)") && err.lines().count() <= 2, "{err}");
    // So is a model the server does not have.
    let out = run_remote(&csv, &db, &url, "right-key").args(["--remote-model", "gpt-17"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no model named \"gpt-17\"; the server has: "));

    // Mid-job the server dies, and comes back a few seconds later.
    let log = d.path().join("run.log");
    let mut job = run_remote(&csv, &db, &url, "right-key")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    while count_samples(&db) < 2 {
        assert!(Instant::now() < deadline, "no progress");
        assert!(job.try_wait().unwrap().is_none(), "the job ended before the server could be killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(server); // SIGKILL
    let at_kill = samples(&db);
    assert!(at_kill.len() < 12, "{} samples when the server died", at_kill.len());
    std::thread::sleep(Duration::from_secs(3));
    assert!(job.try_wait().unwrap().is_none(), "the job waits for the server instead of failing");
    let _server = serve(&model, port, &["--api-key", "right-key"]);
    let status = job.wait().unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("waiting for the server") && stderr.contains("the server is back"), "{stderr}");
    assert_complete(&db, 6);
    let after = samples(&db);
    for s in &at_kill {
        assert!(after.contains(s), "sample {:?} finished before the outage is unchanged", (s.0, s.1));
    }
}

/// A loopback stub in front of the real server: the first chat requests get the statuses in
/// `plan` (429 with Retry-After, 503), the rest are passed through.
fn flaky_proxy(upstream: u16, plan: Vec<u16>) -> (u16, Arc<Mutex<Vec<u16>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let plan = Arc::new(Mutex::new(plan));
    let injected = Arc::new(Mutex::new(Vec::new()));
    let seen = injected.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            let plan = plan.clone();
            let seen = seen.clone();
            std::thread::spawn(move || {
                let Some((head, body)) = read_request(&mut client) else { return };
                let first_line = head.lines().next().unwrap_or("").to_string();
                if first_line.contains("/chat/completions") {
                    if let Some(status) = {
                        let mut p = plan.lock().unwrap();
                        (!p.is_empty()).then(|| p.remove(0))
                    } {
                        seen.lock().unwrap().push(status);
                        let extra = if status == 429 { "Retry-After: 1\r\n" } else { "" };
                        let msg = r#"{"error":{"message":"try again","type":"overloaded"}}"#;
                        let _ = write!(client, "HTTP/1.1 {status} Busy\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{msg}", msg.len());
                        return;
                    }
                }
                // Pass it on, one request per connection.
                let head: String = head
                    .lines()
                    .filter(|l| !l.to_ascii_lowercase().starts_with("connection:"))
                    .map(|l| format!("{l}\r\n"))
                    .collect();
                let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)) else { return };
                let _ = up.write_all(format!("{head}Connection: close\r\n\r\n").as_bytes());
                let _ = up.write_all(&body);
                let _ = std::io::copy(&mut up, &mut client);
            });
        }
    });
    (port, injected)
}

/// The request's head (without the blank line) and its body.
fn read_request(s: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf[..buf.len() - 4]).to_string();
    let len = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0)))
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).ok()?;
    Some((head, body))
}

#[test]
fn busy_answers_429_and_503_are_retried() {
    let d = tempfile::tempdir().unwrap();
    let port = free_port();
    let _server = serve(&small_model(), port, &[]);
    let (proxy, injected) = flaky_proxy(port, vec![429, 503, 503, 429, 503]);
    let csv = keyed_csv(d.path(), 3);
    let db = d.path().join("jobs.sqlite");
    let out = run_remote(&csv, &db, &format!("http://127.0.0.1:{proxy}/v1"), "unused").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(*injected.lock().unwrap(), vec![429, 503, 503, 429, 503], "every planned failure was served");
    assert_complete(&db, 3);
}
