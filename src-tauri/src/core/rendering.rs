//! How the window paints. WebKitGTK composites with OpenGL by default; without a GPU that GL is
//! Mesa's software rasteriser, which redraws the whole window on the CPU for every update. A
//! streaming reply then cost the web process 40–80 % of a core, taken from the engine's
//! threads. Painting without compositing redraws only what changed: 11–14 % of a core for
//! the same kind of reply, measured in the real window. So a computer without a GPU paints
//! directly.
//!
//! (WebKitWebDriver's screenshot never returns from a window painted directly: it waits for a
//! compositor's snapshot. The end-to-end tests read the X display instead, as a user sees it.)

use std::path::Path;

/// How the window paints, decided once at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Painting {
    /// Composited with OpenGL on a GPU: WebKit's default.
    Composited,
    /// Painted on the CPU, only what changed.
    Direct,
}

impl Painting {
    /// Direct where no GPU can be reached (Linux lists each GPU that can render as a DRM render
    /// node, `/dev/dri/renderD*`), composited where one can. `PONDER_PAINTING=direct` or
    /// `composited` overrides it.
    pub fn detect() -> Painting {
        match std::env::var("PONDER_PAINTING").as_deref() {
            Ok("direct") => Painting::Direct,
            Ok("composited") => Painting::Composited,
            _ if has_render_node(Path::new("/dev/dri")) => Painting::Composited,
            _ => Painting::Direct,
        }
    }
}

fn has_render_node(dri: &Path) -> bool {
    std::fs::read_dir(dri)
        .map(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with("renderD")))
        .unwrap_or(false)
}

/// Applies the painting policy to a window's web view.
#[cfg(target_os = "linux")]
pub fn apply(window: &tauri::WebviewWindow, painting: Painting) {
    use webkit2gtk::{HardwareAccelerationPolicy, SettingsExt, WebViewExt};
    tracing::info!(?painting, "window painting");
    if painting == Painting::Composited {
        return;
    }
    let result = window.with_webview(|webview| {
        if let Some(settings) = webview.inner().settings() {
            settings.set_hardware_acceleration_policy(HardwareAccelerationPolicy::Never);
        }
    });
    if let Err(e) = result {
        tracing::warn!("could not set the window's painting: {e}");
    }
}

/// Other systems composite with their own GPU-or-not logic.
#[cfg(not(target_os = "linux"))]
pub fn apply(_window: &tauri::WebviewWindow, _painting: Painting) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_render_node_means_a_gpu() {
        let dir = std::env::temp_dir().join(format!("ponder-dri-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(!has_render_node(&dir), "an empty folder");
        std::fs::write(dir.join("card0"), b"").unwrap();
        assert!(!has_render_node(&dir), "a display card alone does not render");
        std::fs::write(dir.join("renderD128"), b"").unwrap();
        assert!(has_render_node(&dir));
        assert!(!has_render_node(&dir.join("missing")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
