pub mod bench;
pub mod chat;
pub mod models;
