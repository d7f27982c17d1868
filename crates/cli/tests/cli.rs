//! The `ponder` binary as a user runs it: `check`, `chat`, and `run` with a kill and a resume.

mod common;

use common::{count_samples, keyed_csv, ponder, samples};
use ponder_testkit::small_model;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn check_prints_the_verdict_and_exits_0_or_1() {
    let out = ponder().args(["check", "\\frac{1}{2}", "0.5"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.starts_with("equal\n") && s.contains("gold: \\frac{1}{2}") && s.contains("pred: 0.5"), "{s}");
    let out = ponder().args(["check", "18", "The answer is \\boxed{20}"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stdout).unwrap().contains("different\n  gold: 18\n  pred: 20"));
}

#[test]
fn check_explain_says_how_each_side_was_read_and_which_rule_decided() {
    let out = ponder().args(["check", "--explain", "(2, 5)", "Final answer: $(x, y) = (2, 5)$"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("pred: (x, y) = (2, 5) (the text after an answer phrase)"), "{s}");
    assert!(s.contains("read as (2, 5)") && s.contains("rule: tuples, in order"), "{s}");
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("pairs.jsonl");
    std::fs::write(&input, "{\"gold\": \"35 cm\", \"pred\": \"35 mm\"}\n").unwrap();
    let out = ponder().args(["check", "--explain", "--jsonl"]).arg(&input).output().unwrap();
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["equal"], false);
    assert_eq!(line["explain"]["rule"], "different units");
    assert_eq!(line["explain"]["gold"]["found"], "the whole text");
}

#[test]
fn check_jsonl_adds_the_equal_field() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("pairs.jsonl");
    std::fs::write(&input, "{\"gold\": \"1/2\", \"pred\": \"0.5\", \"note\": \"kept\"}\n{\"gold\": \"3\", \"pred\": \"4\"}\n")
        .unwrap();
    let out = ponder().args(["check", "--jsonl"]).arg(&input).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["equal"], true);
    assert_eq!(lines[0]["note"], "kept");
    assert_eq!(lines[1]["equal"], false);
    std::fs::write(&input, "{\"gold\": \"1\"}\n").unwrap();
    let out = ponder().args(["check", "--jsonl"]).arg(&input).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pairs.jsonl:1: missing field \"pred\""));
}

#[test]
fn errors_are_one_line_with_an_exit_code() {
    let out = ponder().args(["chat", "hi", "--model", "/nonexistent.gguf"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim(), "ponder: model file not found: /nonexistent.gguf");
    let out =
        ponder().arg("--model").arg(small_model()).args(["--draft-model", "/no-draft.gguf", "chat", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim(), "ponder: loading the draft model: model file not found: /no-draft.gguf");
}

#[test]
fn chat_streams_an_answer_and_json_events() {
    let out = ponder()
        .arg("--model")
        .arg(small_model())
        .args(["--threads", "2", "chat", "What is 2+2? Reply with just the number.", "--temperature", "0", "--max-tokens", "16"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8(out.stdout).unwrap().contains('4'));
    assert!(String::from_utf8(out.stderr).unwrap().contains("time to first token"));

    let out = ponder()
        .arg("--model")
        .arg(small_model())
        .args(["chat", "--json", "--temperature", "0", "--max-tokens", "8", "Say hi"])
        .output()
        .unwrap();
    let events: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.first().unwrap()["event"], "started");
    assert_eq!(events.last().unwrap()["event"], "finished");
    assert!(events.iter().any(|e| e["event"] == "delta" && e["channel"] == "answer"));
}

/// A CPU without AVX-512, or without AVX2 too, runs the slower kernels; forcing each one here
/// (`PONDER_CPU_KERNEL`) must give the same greedy answer, bit for bit, and say which ran.
#[test]
fn every_kernel_this_cpu_has_gives_the_same_answer() {
    let kernels = ponder_engine::Kernel::available();
    let answers: Vec<String> = kernels
        .iter()
        .map(|k| {
            let out = ponder()
                .env(ponder_engine::kquants::KERNEL_ENV, format!("{k:?}"))
                .arg("--model")
                .arg(small_model())
                .args(["--threads", "2", "chat", "What is 17*23? Explain briefly.", "--temperature", "0", "--max-tokens", "24"])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{err}");
            assert!(err.contains(&format!(", {} kernels)", k.label())), "{k:?}: {err}");
            String::from_utf8(out.stdout).unwrap()
        })
        .collect();
    assert!(kernels.len() > 1, "this CPU runs only {kernels:?}: nothing to compare");
    assert!(answers.iter().all(|a| a == &answers[0] && a.len() > 10), "{answers:#?}");
}

/// `ponder bench` at its smallest: every figure is there and positive, including decode deep
/// into a context (figures themselves are for `make bench`, not for a test).
#[test]
fn bench_reports_every_figure_as_json() {
    let out = ponder()
        .arg("--model")
        .arg(small_model())
        .args(["--draft-model"])
        .arg(small_model())
        .args(["--threads", "2", "--kv-cache", "q8_0", "bench", "--json", "--runs", "1", "--decode-tokens", "8", "--batch", "2"])
        .args(["--prefill-tokens", "64", "--memory-context", "0", "--depths", "300", "--speculative-tokens", "48"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for figure in ["single_decode_tok_s", "prefill_tok_s", "chat_ttft_under_load_s"] {
        assert!(r[figure].as_f64().unwrap() > 0.0, "{figure}: {r}");
    }
    let deep = &r["decode_at_depth"][0];
    assert_eq!(deep["depth"], 300);
    assert!(deep["tok_s"].as_f64().unwrap() > 0.0 && deep["ratio_to_short"].as_f64().unwrap() > 0.0, "{r}");
    assert_eq!(r["aggregate"][0]["sequences"], 2);
    assert_eq!(r["kv_cache"], "q8_0");
    let spec = &r["speculative"];
    assert!(spec["plain_tok_s"].as_f64().unwrap() > 0.0 && spec["speculative_tok_s"].as_f64().unwrap() > 0.0, "{r}");
    assert!((0.0..=1.0).contains(&spec["acceptance_rate"].as_f64().unwrap()), "{r}");
    // The model drafting for itself: its drafts are the model's own greedy choices.
    assert_eq!(spec["draft_model"], "Qwen2.5 Coder 0.5B Instruct AWQ", "{r}");
    assert!(spec["acceptance_rate"].as_f64().unwrap() > 0.9, "{r}");
    assert!(spec["tokens"].as_u64().unwrap() > 8 && spec["prompt_tokens"].as_u64().unwrap() > 50, "{r}");
}

#[test]
fn run_survives_sigkill_and_resumes_without_losing_or_repeating_samples() {
    let d = tempfile::tempdir().unwrap();
    let csv = keyed_csv(d.path(), 6);
    let db = d.path().join("jobs.sqlite");
    let out = d.path().join("results.jsonl");
    let args = |c: &mut Command| {
        c.arg("--model").arg(small_model()).args(["--threads", "2", "run"]).arg(&csv);
        // Greedy: both samples of a problem agree, so every verdict is clear-cut.
        c.args(["--samples", "2", "--max-tokens", "150", "--concurrency", "4", "--temperature", "0", "--store"]).arg(&db);
        c.arg("-o").arg(&out);
    };
    let mut first = ponder();
    args(&mut first);
    let mut child = first.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    // Kill it once some samples are saved and others are not.
    let deadline = Instant::now() + Duration::from_secs(300);
    while count_samples(&db) < 3 {
        assert!(Instant::now() < deadline, "no progress");
        assert!(child.try_wait().unwrap().is_none(), "the job finished before it could be killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = samples(&db);
    assert!(before.len() >= 3 && before.len() < 12, "{} samples at the kill", before.len());

    let mut again = ponder();
    args(&mut again);
    let res = again.output().unwrap();
    assert!(res.status.success(), "{}", String::from_utf8_lossy(&res.stderr));
    assert!(String::from_utf8_lossy(&res.stderr).contains("resuming job"));
    let after = samples(&db);
    assert_eq!(after.len(), 12, "every sample of every problem, once");
    for s in &before {
        assert!(after.contains(s), "sample {:?} saved before the kill is unchanged", (s.0, s.1));
    }
    // The results and the validation report.
    let rows: Vec<serde_json::Value> =
        std::fs::read_to_string(&out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 6);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["id"], format!("p{i}"));
        assert_eq!(r["key"], format!("{}", 2 * i + 2));
        assert_eq!(r["samples"].as_array().unwrap().len(), 2);
        let verdict = r["verdict"].as_str().unwrap();
        assert!(["confirmed", "disputed"].contains(&verdict), "greedy samples agree: {r}");
        let matches_key = ponder_answers::equivalence::equivalent(r["key"].as_str().unwrap(), r["majority"].as_str().unwrap());
        assert_eq!(verdict == "confirmed", matches_key, "{r}");
        for s in r["samples"].as_array().unwrap() {
            for f in ["answer", "extracted", "thinking", "finish_reason", "tokens"] {
                assert!(s.get(f).is_some(), "sample field {f}");
            }
        }
    }
    let confirmed = rows.iter().filter(|r| r["verdict"] == "confirmed").count();
    let md = std::fs::read_to_string(d.path().join("set.report.md")).unwrap();
    assert!(md.contains("6 problems"), "{md}");
    if confirmed > 0 {
        assert!(md.contains(&format!("| confirmed | {confirmed} |")), "{md}");
    }
}

#[test]
fn config_file_gives_defaults_and_flags_win() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("config.toml");
    std::fs::write(&cfg, "model = \"/models/from-config.gguf\"\nthreads = 1\n[serve]\nport = 9\n").unwrap();
    let out = ponder().arg("--config").arg(&cfg).args(["models", "path"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "/models/from-config.gguf");
    let out = ponder().arg("--config").arg(&cfg).args(["--model", "/flag.gguf", "models", "path"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "/flag.gguf");
    std::fs::write(&cfg, "modle = 1\n").unwrap();
    let out = ponder().arg("--config").arg(&cfg).args(["models", "path"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with(&format!("ponder: {}", cfg.display())) && err.contains("unknown field `modle`"), "{err}");
}

#[test]
fn models_pull_fetches_a_catalogue_model_by_name_and_commands_then_find_it() {
    let d = tempfile::tempdir().unwrap();
    let bytes = b"GGUF stand-in bytes".repeat(4096);
    let hub = ponder_testkit::hub::FakeHub::catalogue(bytes.clone());
    let cmd = |args: &[&str]| {
        let out = ponder()
            .env("HF_HOME", d.path())
            .env("HF_ENDPOINT", &hub.url)
            .env_remove("PONDER_MODEL")
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // Every catalogue model is listed, none downloaded yet.
    let (code, list, _) = cmd(&["models", "list"]);
    assert_eq!(code, Some(0));
    for m in ponder_engine::catalog::MODELS {
        assert!(list.contains(m.id) && list.contains(&format!("`ponder models pull {}`", m.id)), "{list}");
    }
    // A name that is not in the list says which names are.
    let (code, _, err) = cmd(&["models", "pull", "qwen9"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no model named \"qwen9\"") && err.contains("qwen3-1.7b, qwen3-4b"), "{err}");
    // A name not yet downloaded, given as --model, says how to get it.
    let (code, _, err) = cmd(&["--model", "qwen3-4b", "models", "path"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("Qwen3-4B is not downloaded yet: `ponder models pull qwen3-4b`"), "{err}");

    let (code, out, err) = cmd(&["models", "pull", "Qwen3-4B"]);
    assert_eq!(code, Some(0), "{err}");
    let path = std::path::PathBuf::from(out.trim());
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert!(path.ends_with("Qwen3-4B-Q4_K_M.gguf"), "{}", path.display());
    let (_, list, _) = cmd(&["models", "list"]);
    assert!(list.contains(&format!("downloaded: {}", path.display())), "{list}");
    let (code, out, _) = cmd(&["--model", "qwen3-4b", "models", "path"]);
    assert_eq!((code, out.trim()), (Some(0), path.to_str().unwrap()));
}
