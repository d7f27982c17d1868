pub mod bench;
pub mod chat;
pub mod check;
pub mod models;
pub mod preview;
pub mod run;
pub mod serve;
