//! Shared pieces of the `ponder` binary's tests: the binary, the real test models, a
//! `ponder serve` child, keyed question files and the job store.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `ponder` binary, never reading a config file of the machine running the tests.
pub fn ponder() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ponder"));
    c.env_remove("PONDER_MODEL")
        .env_remove("PONDER_API_KEY")
        .env("PONDER_LOG", "warn")
        .env("PONDER_CONFIG", "/nonexistent/ponder-config.toml");
    c
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `ponder serve` child, killed when dropped.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `ponder serve` on `port` and waits until it listens.
pub fn serve(model: &Path, port: u16, args: &[&str]) -> Server {
    serve_with_env(model, port, args, &[])
}

/// [`serve`] with extra environment variables for the child.
pub fn serve_with_env(model: &Path, port: u16, args: &[&str], env: &[(&str, &str)]) -> Server {
    let child = ponder()
        .envs(env.iter().copied())
        .arg("--model")
        .arg(model)
        .args(["--threads", "2", "serve", "--port", &port.to_string(), "--context", "4096"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "server did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

/// A CSV of `n` additions with their (right) keys.
pub fn keyed_csv(dir: &Path, n: usize) -> PathBuf {
    let p = dir.join("set.csv");
    let mut s = String::from("id,question,answer\n");
    for i in 0..n {
        s.push_str(&format!("p{i},What is {i} + {}? Give just the number.,{}\n", i + 2, 2 * i + 2));
    }
    std::fs::write(&p, s).unwrap();
    p
}

pub fn count_samples(db: &Path) -> usize {
    let Ok(conn) = rusqlite::Connection::open(db) else { return 0 };
    conn.query_row("SELECT COUNT(*) FROM samples", [], |r| r.get::<_, i64>(0)).map_or(0, |n| n as usize)
}

/// Every stored sample as (problem, sample, answer).
pub fn samples(db: &Path) -> Vec<(i64, i64, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut st = conn.prepare("SELECT problem_idx, sample_idx, answer FROM samples ORDER BY 1, 2").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect()
}
