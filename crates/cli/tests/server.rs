//! `ponder serve` on the real 0.5B model (with the DeepSeek-R1 template, so answers come with
//! reasoning), driven by the official `openai` Python package.

mod common;

use common::{free_port, serve, Server};
use ponder_testkit::r1_model;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn start(model: &std::path::Path, args: &[&str]) -> (Server, u16) {
    let port = free_port();
    (serve(model, port, args), port)
}

#[test]
fn openai_python_client_against_ponder_serve() {
    let model = r1_model();
    let (_server, port) = start(&model, &["--api-key", "sekrit"]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/openai_client.py");
    let out = Command::new("python3").arg(&script).arg(format!("http://127.0.0.1:{port}/v1")).arg("sekrit").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("passed, 0 failed"), "{stdout}");
}

#[test]
fn queue_full_is_503_and_public_address_needs_a_key() {
    let out = Command::new(env!("CARGO_BIN_EXE_ponder"))
        .args(["serve", "--host", "0.0.0.0", "--model", "/nonexistent.gguf"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing to listen on 0.0.0.0 without --api-key"));

    let model = r1_model();
    let (_server, port) = start(&model, &["--max-seqs", "1", "--max-waiting", "1"]);
    // Raw completions that cannot end early (no loop cut, no end-of-sequence): the first runs,
    // the second waits, whatever the speed of the machine.
    let url = format!("http://127.0.0.1:{port}/v1/completions");
    let body = r#"{"prompt":"Once upon a time","max_tokens":3000,"ignore_eos":true,"stream":true}"#;
    // One runs, one waits, the next is turned away.
    let post = |b: &str| {
        Command::new("curl")
            .args(["-s", "-N", "-o", "/dev/null", "-w", "%{http_code}", "-H", "content-type: application/json", "-d", b, &url])
            .spawn()
            .unwrap()
    };
    let a = post(body);
    std::thread::sleep(Duration::from_millis(1500));
    let b = post(body);
    std::thread::sleep(Duration::from_millis(1500));
    let c = Command::new("curl")
        .args(["-s", "-H", "content-type: application/json", "-d", body, "-w", "\n%{http_code}", &url])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&c.stdout);
    assert!(text.trim_end().ends_with("503"), "{text}");
    assert!(text.contains("\"type\":\"server_busy\""), "{text}");
    for mut p in [a, b] {
        let _ = p.kill();
        let _ = p.wait();
    }
}
