//! Problem sets: reading question files, running jobs on a backend, keeping them safe on disk,
//! and reporting what their samples say about each answer key. Finding and checking the answers
//! themselves is `ponder-answers`.

pub mod backend;
pub mod preview;
pub mod reader;
pub mod remote;
pub mod report;
pub mod runner;
pub mod schema;
pub mod store;

/// The answer checker the reports use, for callers that show its explanations.
pub use ponder_answers as answers;
pub use ponder_answers::Verdict;
pub use reader::{read_file, Limits, Preview, Problem};
pub use store::{JobId, JobOptions, JobState, Store};
