//! `ponder serve` on the real 0.5B model (with the DeepSeek-R1 template, so answers come with
//! reasoning), driven by the official `openai` Python package.

mod common;

use common::{free_port, serve, serve_with_env, Server};
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

/// A panic in the engine (planted by the `fault-inject` feature, on in test builds) is a 500 or
/// a stream's error event, never a reply that looks complete; and the next request is served.
#[test]
fn an_engine_panic_is_an_error_and_the_server_goes_on() {
    let port = free_port();
    // Step 1 is the first request's prompt; steps 2 and 3 the second's prompt and first token.
    let _server = serve_with_env(&r1_model(), port, &[], &[("PONDER_FAULT", "step@1,step@3")]);
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let (code, body) = curl(&url, r#"{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4}"#, &[]);
    assert_eq!(code, "500", "{body}");
    assert!(body.contains("\"type\":\"server_error\"") && body.contains("fault injected in step 1"), "{body}");

    let (code, body) = curl(
        &url,
        r#"{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true}"#,
        &["accept: text/event-stream"],
    );
    assert_eq!(code, "200", "{body}");
    assert!(body.contains("data: {\"error\"") && body.contains("fault injected in step 3"), "{body}");
    assert!(!body.contains("\"finish_reason\":\"stop\""), "a failed stream ended as if complete: {body}");
    assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");

    let (code, body) = curl(&url, r#"{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4}"#, &[]);
    assert_eq!(code, "200", "{body}");
    assert!(body.contains("\"finish_reason\""), "{body}");
}

/// A bounded run of the soak test (96 requests; `make soak` runs 1,000): chat requests at
/// concurrency 16, a tenth of them streams that hang up early; no error but 503s, and memory at
/// the end within 10 % of after the first tenth.
#[test]
fn a_short_soak_has_no_errors_and_no_growth() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/soak.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(["--ponder", env!("CARGO_BIN_EXE_ponder"), "--requests", "96", "--max-tokens", "8", "--model"])
        .arg(ponder_testkit::small_model())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let figures: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(figures["errors"], 0, "{figures}");
    assert!(figures["ok"].as_u64().unwrap() >= 60, "most requests were answered: {figures}");
}

/// A client that hangs up while its request waits in the queue frees its place at once: the
/// next request is queued instead of turned away.
#[test]
fn a_request_whose_client_leaves_while_queued_is_dropped() {
    let (_server, port) = start(&r1_model(), &["--max-seqs", "1", "--max-waiting", "1"]);
    let url = format!("http://127.0.0.1:{port}/v1/completions");
    let long = r#"{"prompt":"Once upon a time","max_tokens":3000,"ignore_eos":true,"stream":true}"#;
    let queued = r#"{"prompt":"Once upon a time","max_tokens":3000,"ignore_eos":true}"#;
    let post = |b: &str, max_time: &str| {
        Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", max_time, "-H", "content-type: application/json"])
            .args(["-d", b, &url])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut running = post(long, "60");
    std::thread::sleep(Duration::from_millis(1500));
    // Waits in the queue (not streaming: nothing is sent until it ends), then its client leaves.
    let left = post(queued, "1.5").wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&left.stdout), "000", "it was queued, then the client left");
    std::thread::sleep(Duration::from_millis(1000));
    // The place it held is free again: this one is queued too (and would wait), not refused.
    let next = post(queued, "2").wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&next.stdout), "000", "queued, not 503: the request that left was dropped");
    let _ = running.kill();
    let _ = running.wait();
}

/// Rendering and tokenising a long prompt happen off the async runtime: while more such
/// requests are being tokenised than the runtime has threads (it has 2), the server still
/// answers at once. Were they tokenised on the runtime, `/v1/models` would wait for them.
#[test]
fn long_prompts_being_tokenised_leave_the_server_responsive() {
    let (_server, port) = start(&r1_model(), &[]);
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.json");
    // 3.5 MB of varied words: under the 4 MiB body limit and the cheap length check, so it is
    // tokenised (for seconds) before the engine finds it longer than the context.
    let words: String = (0..400_000).map(|i| format!(" w{}", i * 7919 % 100_003)).collect();
    std::fs::write(&body, serde_json::json!({ "prompt": words, "max_tokens": 1 }).to_string()).unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let long: Vec<_> = (0..4)
        .map(|_| {
            Command::new("curl")
                .args([
                    "-s",
                    "-o",
                    "/dev/null",
                    "-w",
                    "%{http_code}",
                    "--max-time",
                    "120",
                    "-H",
                    "content-type: application/json",
                ])
                .args(["--data-binary", &format!("@{}", body.display()), &format!("{url}/v1/completions")])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let models = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "1", &format!("{url}/v1/models")])
        .output()
        .unwrap();
    let mut long = long;
    let still_tokenising = long.iter_mut().map(|c| c.try_wait().unwrap().is_none()).filter(|&running| running).count();
    assert_eq!(String::from_utf8_lossy(&models.stdout), "200", "the server answered within a second");
    assert!(still_tokenising >= 3, "only {still_tokenising} of the long prompts were still being read: the test proves nothing");
    for c in long {
        let out = c.wait_with_output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "400", "too long for the context, said after tokenising");
    }
}

/// vLLM's sampling extras work on chat completions too: `ignore_eos` gives the tokens asked for
/// (a benchmark that asked for 128 used to get a dozen and "stop"), and bad values are 400s that
/// name the field.
#[test]
fn chat_completions_take_vllms_sampling_extras() {
    let (_server, port) = start(&r1_model(), &[]);
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let post = |body: serde_json::Value| -> (u16, serde_json::Value) {
        let out = Command::new("curl")
            .args(["-s", "-w", "\n%{http_code}", "--max-time", "300", "-H", "content-type: application/json"])
            .args(["-d", &body.to_string(), &url])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let (json, code) = text.rsplit_once('\n').unwrap();
        (code.parse().unwrap(), serde_json::from_str(json).unwrap_or_default())
    };
    let ask = |extra: serde_json::Value| {
        let mut body = serde_json::json!({ "messages": [{ "role": "user", "content": "Say yes." }], "max_tokens": 48,
            "temperature": 0.7, "top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1, "seed": 3 });
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        post(body)
    };
    let (code, reply) = ask(serde_json::json!({ "ignore_eos": true }));
    assert_eq!(code, 200, "{reply}");
    assert_eq!(reply["usage"]["completion_tokens"], 48, "{reply}");
    assert_eq!(reply["choices"][0]["finish_reason"], "length", "{reply}");
    // The same seed and parameters give the same reply.
    let (_, again) = ask(serde_json::json!({ "ignore_eos": true }));
    assert_eq!(again["choices"], reply["choices"]);
    for (extra, field) in [
        (serde_json::json!({ "min_tokens": 49 }), "min_tokens"),
        (serde_json::json!({ "top_k": -2 }), "top_k"),
        (serde_json::json!({ "min_p": 1.5 }), "min_p"),
        (serde_json::json!({ "repetition_penalty": 0 }), "repetition_penalty"),
        (serde_json::json!({ "reasoning_effort": "extreme" }), "reasoning_effort"),
        (serde_json::json!({ "chat_template_kwargs": { "enable_thinking": "no" } }), "chat_template_kwargs"),
    ] {
        let (code, reply) = ask(extra.clone());
        assert_eq!((code, reply["error"]["param"].as_str()), (400, Some(field)), "{extra}: {reply}");
    }
}

/// A Qwen3 model thinks unless the request turns it off, by vLLM's `chat_template_kwargs` or by
/// `reasoning_effort: "none"`. The model is a small random Qwen3 with Qwen3's own template: what
/// it says is noise, but which channel it goes to is the template's doing.
#[test]
fn qwen3_thinking_is_switched_per_request() {
    use ponder_testkit::tiny::{Quant, Tiny, Value, QWEN3_TEMPLATE};
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny-qwen3.gguf");
    Tiny::of(ponder_engine::Family::Qwen3).write_gguf(&model, Quant::Q8_0, |md| {
        md.insert("tokenizer.chat_template".into(), Value::String(QWEN3_TEMPLATE.into()));
    });
    let (_server, port) = start(&model, &[]);
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    let ask = |extra: &str| -> serde_json::Value {
        let body = format!(
            r#"{{"messages":[{{"role":"user","content":"What is 2+2?"}}],"max_tokens":12,"ignore_eos":true,"temperature":0{extra}}}"#
        );
        let out = Command::new("curl")
            .args(["-s", "--max-time", "120", "-H", "content-type: application/json", "-d", &body, &url])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    };
    let thinks = |reply: &serde_json::Value| {
        let m = &reply["choices"][0]["message"];
        let reasoning = reply["usage"]["completion_tokens_details"]["reasoning_tokens"].as_u64().unwrap();
        (reasoning, m["content"].as_str().unwrap_or_default().is_empty())
    };
    // On by default: all twelve tokens are thought (noise never closes the thought).
    assert_eq!(thinks(&ask("")), (12, true));
    assert_eq!(thinks(&ask(r#","chat_template_kwargs":{"enable_thinking":true}"#)), (12, true));
    // Off: the template closes an empty thought and everything is answer.
    let off = ask(r#","chat_template_kwargs":{"enable_thinking":false}"#);
    assert_eq!(thinks(&off), (0, false), "{off}");
    assert_eq!(thinks(&ask(r#","reasoning_effort":"none""#)), (0, false));
    assert_eq!(thinks(&ask(r#","reasoning_effort":"high""#)), (12, true));
}
