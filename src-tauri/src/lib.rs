//! The Ponder desktop app. Commands are thin adapters over the `ponder-*` crates; each domain
//! lives in its own folder under `core/`.

mod core;

use core::{chat, engine, files, jobs, model, notices, print, remote, server, settings};
use std::sync::Arc;
use tauri::{Emitter, Manager};

pub fn run() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();

    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .setup(|app| {
            if let Some(window) = app.get_webview_window("main") {
                core::rendering::apply(&window, core::rendering::Painting::detect());
            }
            let paths = core::paths::AppPaths::resolve(app.handle())?;
            let settings = settings::SettingsState::load(paths.clone());
            let current = settings.get();
            // Threads are fixed for the life of the process (candle's pool is global).
            ponder_engine::process::set_threads(current.threads);
            ponder_engine::process::keep_freed_step_buffers();
            let engine = Arc::new(engine::EngineState::with_load_marker(paths.load_marker()));
            // A model whose load ended the last run is not loaded again by itself.
            let crashed = engine.take_crashed_load();
            if let model::ModelStatus::Ready { info } = model::status(&current) {
                if crashed.as_ref() == Some(&info.path) {
                    engine.skip_crashed(info.path);
                } else {
                    engine.load(info.path, &current);
                }
            }
            // A store that cannot be used is moved aside and the user told; the app starts.
            let notices = notices::Notices::default();
            let (chat_store, moved) = chat::store::ChatStore::open_or_move_aside(&paths.chat_db())?;
            let (jobs_state, moved_jobs) = jobs::JobsState::open(paths.jobs_db()).map_err(anyhow::Error::msg)?;
            for m in moved.into_iter().chain(moved_jobs) {
                notices.moved_aside(m);
            }
            let api_server = server::ServerState::default();
            api_server.apply(server::Wanted::of(&current), engine.clone());
            app.manage(settings);
            app.manage(engine);
            app.manage(api_server);
            app.manage(model::DownloadState::default());
            app.manage(files::FileGrants::default());
            app.manage(remote::RemoteState { secrets: Box::new(remote::OsKeyring) });
            app.manage(Arc::new(jobs_state));
            app.manage(notices);
            app.manage(Arc::new(chat::ChatState::new(chat_store)));
            Ok(())
        })
        // Files dropped on the window are granted here, from the window system's own event,
        // before the page hears of them.
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::DragDrop(tauri::DragDropEvent::Drop { paths, .. }) = event {
                window.state::<files::FileGrants>().grant(files::Access::Read, paths.iter().cloned());
                let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                let _ = window.emit("ponder://files-dropped", shown);
            }
        })
        .invoke_handler(tauri::generate_handler![
            model::commands::model_status,
            model::commands::open_model,
            model::commands::model_catalog,
            model::commands::local_models,
            model::commands::use_local_model,
            model::commands::add_model_folder,
            model::commands::remove_model_folder,
            model::commands::download_model,
            model::commands::cancel_download,
            files::commands::pick_question_files,
            files::commands::pick_model,
            files::commands::pick_save_path,
            files::commands::save_document,
            print::commands::print_document,
            settings::commands::get_settings,
            settings::commands::save_settings,
            engine::commands::engine_status,
            server::commands::server_status,
            chat::commands::list_conversations,
            chat::commands::create_conversation,
            chat::commands::rename_conversation,
            chat::commands::set_conversation_thinking,
            chat::commands::delete_conversation,
            chat::commands::get_messages,
            chat::commands::export_conversation,
            chat::commands::send_message,
            chat::commands::regenerate,
            chat::commands::edit_and_resend,
            chat::commands::stop_reply,
            remote::commands::remote_key_stored,
            remote::commands::set_remote_key,
            remote::commands::check_remote,
            jobs::commands::preview_file,
            jobs::commands::create_job,
            jobs::commands::list_jobs,
            jobs::commands::job_table,
            jobs::commands::problem_samples,
            jobs::commands::run_job,
            jobs::commands::pause_job,
            jobs::commands::cancel_job,
            jobs::commands::delete_job,
            jobs::commands::export_job,
            jobs::commands::job_report,
            notices::commands::take_notices,
        ])
        .run(tauri::generate_context!())
        .expect("error while running the Ponder app");
}
