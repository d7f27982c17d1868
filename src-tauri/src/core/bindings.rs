//! The window's TypeScript types, generated from the Rust types that cross the Tauri boundary
//! (ts-rs) into `ui/src/lib/bindings.ts`, so the UI cannot drift from what Rust sends. The test
//! fails when that file is stale; `make bindings` writes it anew.

use std::path::PathBuf;
use ts_rs::{Config, TS};

/// Every type the window receives or sends, with the ones they name.
fn declarations() -> String {
    use crate::core::{chat, engine, jobs, model, server, settings};
    use ponder_jobs::{reader, report, runner, store};
    // Counts and ids fit a JavaScript number: none of them nears 2^53.
    let cfg = Config::new().with_large_int("number");
    let decls = [
        // The engine and the model.
        ponder_engine::ModelInfo::decl(&cfg),
        ponder_engine::chat_template::Thinking::decl(&cfg),
        ponder_engine::Kernel::decl(&cfg),
        ponder_engine::LoadProgress::decl(&cfg),
        ponder_engine::EngineStats::decl(&cfg),
        ponder_engine::Channel::decl(&cfg),
        model::ModelStatus::decl(&cfg),
        model::DownloadEvent::decl(&cfg),
        ponder_engine::CatalogModel::decl(&cfg),
        ponder_engine::Family::decl(&cfg),
        model::CatalogEntry::decl(&cfg),
        ponder_engine::local_models::Source::decl(&cfg),
        model::LocalModel::decl(&cfg),
        engine::EngineStatus::decl(&cfg),
        // Settings and the server.
        settings::Language::decl(&cfg),
        settings::Theme::decl(&cfg),
        ponder_engine::KvCacheType::decl(&cfg),
        settings::Settings::decl(&cfg),
        server::ServerStatus::decl(&cfg),
        // Chat.
        chat::store::Conversation::decl(&cfg),
        chat::store::Role::decl(&cfg),
        chat::store::ReplyStats::decl(&cfg),
        chat::store::ChatMessage::decl(&cfg),
        chat::ChatEvent::decl(&cfg),
        chat::commands::Sent::decl(&cfg),
        // Question files and jobs.
        reader::Problem::decl(&cfg),
        reader::Format::decl(&cfg),
        reader::Columns::decl(&cfg),
        reader::WarningCode::decl(&cfg),
        reader::Warning::decl(&cfg),
        ponder_jobs::preview::FilePreview::decl(&cfg),
        store::JobOptions::decl(&cfg),
        store::JobState::decl(&cfg),
        store::JobSummary::decl(&cfg),
        store::SampleRow::decl(&cfg),
        ponder_jobs::Verdict::decl(&cfg),
        ponder_jobs::answers::verdict::UnsureReason::decl(&cfg),
        ponder_jobs::answers::extract::Found::decl(&cfg),
        ponder_jobs::answers::equivalence::Rule::decl(&cfg),
        ponder_jobs::answers::equivalence::Check::decl(&cfg),
        report::ProblemStatus::decl(&cfg),
        report::VerdictCounts::decl(&cfg),
        report::ExportFormat::decl(&cfg),
        jobs::ExportNames::decl(&cfg),
        jobs::JobTable::decl(&cfg),
        jobs::JobReport::decl(&cfg),
        jobs::ShownSample::decl(&cfg),
        runner::Progress::decl(&cfg),
        runner::JobEvent::decl(&cfg),
        jobs::Stopped::decl(&cfg),
        jobs::JobUiEvent::decl(&cfg),
        jobs::commands::RunOn::decl(&cfg),
        crate::core::error::CommandError::decl(&cfg),
    ];
    let mut out = String::from(
        "// Generated from Ponder's Rust types by src-tauri/src/core/bindings.rs: run `make bindings`\n\
         // after changing one of them. Do not edit by hand.\n",
    );
    for d in decls {
        out.push_str("\nexport ");
        out.push_str(&d);
        out.push('\n');
    }
    // Rules the window shows, from the crates that own them.
    let extensions = serde_json::to_string(ponder_jobs::reader::EXTENSIONS).expect("strings serialise");
    out.push_str(&format!("\n/** The question-file extensions (`ponder_jobs::reader::EXTENSIONS`). */\nexport const QUESTION_EXTENSIONS: string[] = {extensions};\n"));
    out
}

#[test]
fn the_windows_typescript_types_are_generated_from_the_rust_ones() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ui/src/lib/bindings.ts");
    let want = declarations();
    if std::env::var_os("PONDER_WRITE_BINDINGS").is_some() {
        std::fs::write(&path, &want).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(have == want, "{} is stale: run `make bindings` and commit it", path.display());
}
