//! The Ponder desktop app. Commands are thin adapters over the `ponder-*` crates; each domain
//! lives in its own folder under `core/`.

mod core;

use tauri::Manager;

pub fn run() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info".into()),
        )
        .init();

    tauri::Builder::default()
        .setup(|app| {
            let dirs = core::paths::AppPaths::resolve(app.handle())?;
            app.manage(core::model::ModelState::new(dirs));
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![core::model::commands::model_status])
        .run(tauri::generate_context!())
        .expect("error while running the Ponder app");
}
