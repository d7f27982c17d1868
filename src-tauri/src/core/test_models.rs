//! The real test models for the app's tests, from `ponder-testkit`.
pub use ponder_testkit::{r1_model, small_model};
