//! Which files the window may have read or written: only those the user dropped on it or picked
//! in a dialog. The page passes paths to commands, but a path it was not given is refused, so
//! even script injected into the page could not reach other files.
pub mod commands;

use crate::core::error::CommandError;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[derive(Default)]
pub struct FileGrants(Mutex<HashSet<PathBuf>>);

/// The path as the file system resolves it (`..` and links gone); a file that does not exist
/// yet (a report to write) resolves through its folder.
fn resolve(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok().or_else(|| {
        let parent = std::fs::canonicalize(path.parent()?).ok()?;
        Some(parent.join(path.file_name()?))
    })
}

impl FileGrants {
    pub fn grant(&self, paths: impl IntoIterator<Item = PathBuf>) {
        let mut granted = self.0.lock().unwrap();
        for p in paths {
            if let Some(r) = resolve(&p) {
                granted.insert(r);
            }
        }
    }

    /// The path, if the user gave it (a granted folder covers what is inside it: a model folder).
    pub fn check(&self, path: &str) -> Result<PathBuf, CommandError> {
        let path = PathBuf::from(path);
        let shown = [("path", path.display().to_string())];
        let Some(resolved) = resolve(&path) else {
            return Err(CommandError::coded("files.not_found", format!("{}: no such file or folder", path.display()), &shown));
        };
        let granted = self.0.lock().unwrap();
        if resolved.ancestors().any(|a| granted.contains(a)) {
            Ok(resolved)
        } else {
            let message = format!("{}: Ponder may only open files you drop on its window or pick", path.display());
            Err(CommandError::coded("files.not_granted", message, &shown))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_given_files_and_what_is_inside_given_folders() {
        let dir = tempfile::tempdir().unwrap();
        let set = dir.path().join("set.csv");
        std::fs::write(&set, "q\n").unwrap();
        let model = dir.path().join("model");
        std::fs::create_dir(&model).unwrap();
        std::fs::write(model.join("config.json"), "{}").unwrap();
        let other = dir.path().join("secret.txt");
        std::fs::write(&other, "x").unwrap();

        let g = FileGrants::default();
        let s = |p: &Path| p.display().to_string();
        let refused = g.check(&s(&set)).unwrap_err();
        assert!(refused.code == "files.not_granted" && refused.message.contains("only open files you drop"), "{refused:?}");
        g.grant([set.clone(), model.clone(), dir.path().join("report.md")]);
        assert!(g.check(&s(&set)).is_ok());
        assert!(g.check(&s(&model.join("config.json"))).is_ok());
        assert!(g.check(&s(&dir.path().join("report.md"))).is_ok(), "a save target that does not exist yet");
        assert!(g.check(&s(&other)).is_err());
        // No way around it with `..`.
        assert!(g.check(&format!("{}/../secret.txt", model.display())).is_err());
        let missing = g.check("/nonexistent/file.csv").unwrap_err();
        assert!(missing.code == "files.not_found" && missing.params["path"] == "/nonexistent/file.csv", "{missing:?}");
    }
}
