//! Problem sets: reading question files, finding and checking final answers, validating answer
//! keys, running jobs on a backend, and keeping them safe on disk.

pub mod backend;
pub mod equivalence;
pub mod expr;
pub mod extract;
mod json;
pub mod parse;
pub mod reader;
pub mod remote;
pub mod report;
pub mod runner;
pub mod store;
mod table;
mod text;
pub mod verdict;

pub use reader::{read_file, Limits, Preview, Problem};
pub use store::{JobId, JobOptions, JobState, Store};
pub use verdict::Verdict;
