pub mod bench;
pub mod chat;
pub mod check;
pub mod models;
pub mod perplexity;
pub mod preview;
pub mod run;
pub mod serve;

/// `--think on|off`: for models whose template has the switch (Qwen3). R1 models always think
/// and plain instruct models never do, whatever is asked.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Think {
    On,
    Off,
}

impl Think {
    pub fn wanted(switch: Option<Think>) -> Option<bool> {
        switch.map(|t| matches!(t, Think::On))
    }
}
