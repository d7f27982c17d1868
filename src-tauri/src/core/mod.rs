pub mod chat;
pub mod engine;
pub mod model;
pub mod paths;
pub mod server;
pub mod settings;
