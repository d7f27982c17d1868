//! Printing a document the window made (the validation report). In Tauri's WebKitGTK window a
//! page's own `print()` opens nothing (tried on the real window: no dialog, from the page or
//! from a frame), so the document goes into a hidden web view of its own, and GTK's print dialog
//! prints that whole document with its print styles, to paper or to a PDF file. The hidden view
//! is closed once printing ends or the dialog is cancelled.

use crate::core::error::CommandError;
use std::sync::atomic::{AtomicU32, Ordering};

pub mod commands {
    use super::*;

    /// Opens the print dialog for `html` (a whole document), over `window`.
    #[tauri::command]
    pub async fn print_document(
        app: tauri::AppHandle,
        window: tauri::WebviewWindow,
        html: String,
        title: String,
    ) -> Result<(), CommandError> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let label = format!("print-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        // A window with no capability: the document runs no script, and could call nothing.
        let blank = "about:blank".parse().expect("a valid URL");
        let helper = tauri::WebviewWindowBuilder::new(&app, label, tauri::WebviewUrl::External(blank))
            .title(title)
            .visible(false)
            .build()
            .map_err(|e| {
                CommandError::coded("print.failed", format!("could not prepare the printout: {e}"), &[("detail", e.to_string())])
            })?;
        platform::print(window, helper, html)
    }
}

#[cfg(target_os = "linux")]
mod platform {
    use super::*;
    use webkit2gtk::{LoadEvent, PrintOperationExt, PrintOperationResponse, WebViewExt};

    pub fn print(parent: tauri::WebviewWindow, helper: tauri::WebviewWindow, html: String) -> Result<(), CommandError> {
        let close = helper.clone();
        let result = helper.with_webview(move |webview| {
            let view = webview.inner();
            let parent = parent.gtk_window().ok();
            // Printed once the document has loaded (KaTeX's fonts are inside it); once only.
            let started = std::cell::Cell::new(false);
            view.connect_load_changed(move |view, event| {
                if event != LoadEvent::Finished || started.replace(true) {
                    return;
                }
                let operation = webkit2gtk::PrintOperation::new(view);
                let (done, failed) = (close.clone(), close.clone());
                operation.connect_finished(move |_| {
                    let _ = done.destroy();
                });
                operation.connect_failed(move |_, error| {
                    tracing::warn!("printing failed: {error}");
                    let _ = failed.destroy();
                });
                if operation.run_dialog(parent.as_ref()) == PrintOperationResponse::Cancel {
                    let _ = close.destroy();
                }
            });
            view.load_html(&html, None);
        });
        result.map_err(|e| CommandError::coded("print.failed", format!("could not print: {e}"), &[("detail", e.to_string())]))
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    use super::*;

    /// Elsewhere the system web view prints a page's own `print()`; the window does that.
    pub fn print(_parent: tauri::WebviewWindow, helper: tauri::WebviewWindow, _html: String) -> Result<(), CommandError> {
        let _ = helper.destroy();
        Err(CommandError::coded("print.unsupported", "printing from Ponder is built for Linux only", &[]))
    }
}
