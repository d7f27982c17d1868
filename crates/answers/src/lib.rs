//! Final answers, with no I/O: finding the answer in a model's reply ([`extract`]), reading it
//! as maths ([`parse`] into [`expr`]), comparing it with a key ([`equivalence`]), and judging a
//! problem's samples against the key ([`verdict`]).
//!
//! The fuzz target and `ponder check` depend on this crate alone.

pub mod equivalence;
pub mod expr;
pub mod extract;
pub mod parse;
pub mod verdict;

pub use verdict::Verdict;
