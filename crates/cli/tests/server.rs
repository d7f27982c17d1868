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

/// `curl` with a body and extra headers; the status code and the body.
fn curl(url: &str, body: &str, headers: &[&str]) -> (String, String) {
    let mut c = Command::new("curl");
    c.args(["-s", "-H", "content-type: application/json", "-w", "\n%{http_code}"]);
    for h in headers {
        c.args(["-H", h]);
    }
    let out = c.args(["-d", body, url]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.to_string(), body.to_string())
}

#[test]
fn another_host_another_site_bad_keys_and_limits_are_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_ponder"))
        .args(["serve", "--api-key", " ", "--model", "/nonexistent.gguf"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the API key is empty"), "{}", String::from_utf8_lossy(&out.stderr));

    let (_server, port) = start(&r1_model(), &["--api-key", "sesame"]);
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let key = "authorization: Bearer sesame";
    let ok = r#"{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2}"#;
    assert_eq!(curl(&url, ok, &[key]).0, "200");
    // DNS rebinding: a name that is not this machine's, or a page of another site.
    let (code, body) = curl(&url, ok, &[key, "host: evil.example:8080"]);
    assert_eq!(code, "403", "{body}");
    assert!(body.contains("localhost only"), "{body}");
    assert_eq!(curl(&url, ok, &[key, "origin: https://evil.example"]).0, "403");
    assert_eq!(curl(&url, ok, &[key, &format!("origin: http://localhost:{port}")]).0, "200");
    // Keys: wrong, longer, or a prefix of the right one.
    for wrong in ["Bearer sesam", "Bearer sesame2", "Bearer ", "sesame"] {
        assert_eq!(curl(&url, ok, &[&format!("authorization: {wrong}")]).0, "401", "{wrong}");
    }
    // OpenAI's limits on stop, and a max_tokens that would overflow a sum.
    let five = r#"{"messages":[{"role":"user","content":"Hi"}],"stop":["a","b","c","d","e"]}"#;
    let (code, body) = curl(&url, five, &[key]);
    assert_eq!(code, "400", "{body}");
    assert!(body.contains("at most 4"), "{body}");
    let huge = format!(r#"{{"messages":[{{"role":"user","content":"Hi"}}],"max_tokens":{}}}"#, u64::MAX);
    let (code, body) = curl(&url, &huge, &[key]);
    assert_eq!(code, "400", "{body}");
    assert!(body.contains("max_tokens"), "{body}");
}
