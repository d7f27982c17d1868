//! `ponder preview`: what the app's preview shows, from a terminal, with no model; and what a
//! big file costs to read. Its own test binary, so that the peak memory of its children is
//! theirs alone (no model-loading test runs beside it).

mod common;

use common::ponder;

#[test]
fn preview_prints_what_the_window_shows_and_json_for_scripts() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("set.csv");
    std::fs::write(&path, "id,question,answer\n1,What is 2 + 2?,4\n1,What is 3 * 3?,9\n2,,5\n").unwrap();
    let out = ponder().arg("preview").arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "set.csv: 2 problems, Csv, UTF-8\n",
        "answer key: column \"answer\"\n",
        "set.csv:3: warning: duplicate id \"1\" (first at line 2); renamed to \"1-2\"\n",
        "set.csv:4: warning: empty question; row skipped\n",
        "  1-2 (line 3): What is 3 * 3?  [key: 9]\n",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
    let out = ponder().args(["preview", "--json"]).arg(&path).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((json["problem_count"].as_u64(), json["has_key"].as_bool()), (Some(2), Some(true)));
    assert_eq!((json["suggested_samples"].as_u64(), json["suggested_max_samples"].as_u64()), (Some(2), Some(8)));
    assert_eq!(json["warnings"][0]["code"], "duplicate_id");
    assert_eq!(json["more_warnings"], 0);
    let out = ponder().arg("preview").arg(d.path().join("missing.csv")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("ponder: "), "one clear line");
}

/// The largest resident set of the children waited for so far, in bytes.
fn children_peak_rss() -> u64 {
    // SAFETY: rusage is plain integers, for which all zeroes is a value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) }, 0);
    usage.ru_maxrss as u64 * 1024
}

#[test]
fn a_60_mib_file_is_read_in_under_ten_times_its_size() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("big.csv");
    // 100,000 problems (the limit) of about 650 bytes each.
    let filler = "a long word problem about trains, apples and the ages of three sisters; ".repeat(8);
    let mut text = String::from("question,answer\n");
    for i in 0..100_000 {
        text.push_str(&format!("Problem {i}: {filler}(show your working, step by step) How many?,{i}\n"));
    }
    std::fs::write(&path, &text).unwrap();
    let size = text.len() as u64;
    assert!(size > 60 << 20 && size < 64 << 20, "{size}");
    let out = ponder().args(["preview", "--json"]).arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["problem_count"], 100_000);
    let peak = children_peak_rss();
    assert!(peak < 10 * size, "peak resident memory {} MiB for a {} MiB file", peak >> 20, size >> 20);
    eprintln!("peak resident memory {} MiB for a {} MiB file", peak >> 20, size >> 20);
}
