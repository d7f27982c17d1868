pub mod bench;
pub mod chat;
pub mod check;
pub mod models;
pub mod run;
pub mod serve;
