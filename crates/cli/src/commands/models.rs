use anyhow::{bail, Result};
use indicatif::{ProgressBar, ProgressStyle};
use ponder_engine::{catalog, download, Thinking};
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Show the models Ponder offers, which are downloaded, and where.
    List,
    /// Download a model (the default if no NAME is given); resumes a partial download.
    Pull {
        /// A name from `ponder models list`, such as qwen3-1.7b.
        name: Option<String>,
    },
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

fn thinking(t: Thinking) -> &'static str {
    match t {
        Thinking::Always => "always thinks",
        Thinking::Switchable => "thinking can be turned off",
        Thinking::Never => "answers directly",
    }
}

pub fn run(cmd: Cmd, model: Option<PathBuf>) -> Result<()> {
    match cmd {
        Cmd::List => {
            for (i, m) in catalog::MODELS.iter().enumerate() {
                let default = if i == 0 { ", default" } else { "" };
                println!("{:<30} {} ({}, {}{default})", m.id, m.label(), m.family, thinking(m.thinking));
                println!("{:<30} {} Needs {} GB of memory.", "", m.good_for, m.min_ram_gb);
                match download::cached(m) {
                    Some(p) => println!("{:<30} downloaded: {}", "", p.display()),
                    None => println!("{:<30} not downloaded: `ponder models pull {}`", "", m.id),
                }
            }
            if let Some(m) = model.filter(|m| m.exists()) {
                let (ct, size) = ponder_engine::loader::read_gguf_header(&m)?;
                let arch = ct.metadata.get("general.architecture").and_then(|v| v.to_string().ok()).cloned().unwrap_or_default();
                println!("\n--model {}  ({arch}, {:.2} GB)", m.display(), size as f64 / 1e9);
            }
        }
        Cmd::Pull { name } => {
            let entry = match name.as_deref() {
                None => catalog::default_model(),
                Some(n) => match catalog::find(n) {
                    Some(m) => m,
                    None => {
                        let names: Vec<_> = catalog::MODELS.iter().map(|m| m.id).collect();
                        bail!("no model named {n:?}; the models Ponder offers are: {}", names.join(", "))
                    }
                },
            };
            eprintln!("{} from {}", entry.label(), entry.repo);
            let bar = ProgressBar::new(0).with_style(
                ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}").expect("valid template"),
            );
            let path = download::download(entry, Bar(bar))?;
            println!("{}", path.display());
        }
        Cmd::Path => println!("{}", crate::model_arg::resolve(model)?.display()),
    }
    Ok(())
}
