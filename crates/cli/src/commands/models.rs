use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use ponder_engine::download;
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Show the models Ponder knows about and where they are.
    List,
    /// Download the default model (resumes a partial download).
    Pull,
    /// Print the path of the model a command would use.
    Path,
}

struct Bar(ProgressBar);

impl download::Progress for Bar {
    fn start(&mut self, total: u64) {
        self.0.set_length(total);
    }
    fn advance(&mut self, n: u64) {
        self.0.inc(n);
    }
    fn finish(&mut self) {
        self.0.finish();
    }
}

pub fn run(cmd: Cmd, model: Option<PathBuf>) -> Result<()> {
    match cmd {
        Cmd::List => {
            match download::cached_default_model() {
                Some(p) => println!("{}  (default, downloaded)\n  {}", download::DEFAULT_DISPLAY_NAME, p.display()),
                None => println!("{}  (default, not downloaded: `ponder models pull`)", download::DEFAULT_DISPLAY_NAME),
            }
            if let Some(m) = model {
                let (ct, size) = ponder_engine::loader::read_gguf_header(&m)?;
                let arch = ct.metadata.get("general.architecture").and_then(|v| v.to_string().ok()).cloned().unwrap_or_default();
                println!("{}  ({arch}, {:.2} GB)", m.display(), size as f64 / 1e9);
            }
        }
        Cmd::Pull => {
            let bar = ProgressBar::new(0).with_style(
                ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}").expect("valid template"),
            );
            let path = download::download_default_model(Bar(bar))?;
            println!("{}", path.display());
        }
        Cmd::Path => println!("{}", crate::model_arg::resolve(model)?.display()),
    }
    Ok(())
}
