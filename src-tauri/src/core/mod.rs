#[cfg(test)]
mod bindings;
pub mod chat;
pub mod desktop_notice;
pub mod engine;
pub mod error;
pub mod files;
pub mod jobs;
pub mod model;
pub mod notices;
pub mod paths;
pub mod print;
pub mod remote;
pub mod rendering;
pub mod server;
pub mod settings;
#[cfg(test)]
pub mod test_models;
