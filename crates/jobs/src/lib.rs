//! Problem sets: reading question files, finding and checking final answers, validating answer
//! keys, and keeping jobs safe on disk.

pub mod equivalence;
pub mod expr;
pub mod extract;
pub mod parse;
