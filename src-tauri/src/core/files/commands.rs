//! Dialogs opened from Rust, so that what the user picks is granted here (the page never gets
//! a dialog of its own).
use super::{Access, FileGrants};
use tauri::{AppHandle, State};
use tauri_plugin_dialog::DialogExt;

fn grant_all(grants: &FileGrants, access: Access, picked: Vec<tauri_plugin_dialog::FilePath>) -> Vec<String> {
    let paths: Vec<_> = picked.into_iter().filter_map(|p| p.into_path().ok()).collect();
    grants.grant(access, paths.clone());
    paths.into_iter().map(|p| p.display().to_string()).collect()
}

/// Question files for a batch job.
#[tauri::command(async)]
pub fn pick_question_files(app: AppHandle, grants: State<'_, FileGrants>, title: String, filter: String) -> Vec<String> {
    let picked = app
        .dialog()
        .file()
        .set_title(title)
        .add_filter(filter, &ponder_jobs::reader::Format::all_extensions().collect::<Vec<_>>())
        .blocking_pick_files()
        .unwrap_or_default();
    grant_all(&grants, Access::Read, picked)
}

/// A GGUF file, or a model folder.
#[tauri::command(async)]
pub fn pick_model(app: AppHandle, grants: State<'_, FileGrants>, folder: bool, title: String) -> Option<String> {
    let dialog = app.dialog().file().set_title(title);
    let picked = if folder { dialog.blocking_pick_folder() } else { dialog.add_filter("GGUF", &["gguf"]).blocking_pick_file() };
    grant_all(&grants, Access::Read, picked.into_iter().collect()).pop()
}

/// Where to save an export.
#[tauri::command(async)]
pub fn pick_save_path(
    app: AppHandle,
    grants: State<'_, FileGrants>,
    title: String,
    file_name: String,
    extension: String,
) -> Option<String> {
    let picked = app
        .dialog()
        .file()
        .set_title(title)
        .set_file_name(file_name)
        .add_filter(extension.to_uppercase(), &[extension.as_str()])
        .blocking_save_file();
    grant_all(&grants, Access::Write, picked.into_iter().collect()).pop()
}

/// Writes a document the window rendered (a report as HTML) where the user chose to save it.
#[tauri::command(async)]
pub fn save_document(
    grants: State<'_, FileGrants>,
    path: String,
    contents: String,
) -> Result<(), crate::core::error::CommandError> {
    let path = grants.check(&path, Access::Write)?;
    Ok(std::fs::write(&path, contents).map_err(|e| format!("{}: {e}", path.display()))?)
}
