//! Which files the window may have read or written: only those the user dropped on it or picked
//! in a dialog. The page passes paths to commands, but a path it was not given is refused, so
//! even script injected into the page could not reach other files.
pub mod commands;

use crate::core::error::CommandError;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Granted paths, by what the window may do with them.
#[derive(Default)]
pub struct FileGrants(Mutex<Granted>);

#[derive(Default)]
struct Granted {
    /// Dropped or picked files and folders (a folder covers what is inside it).
    read: HashSet<PathBuf>,
    /// Targets of a save dialog: only these exact paths may be written.
    write: HashSet<PathBuf>,
}

/// What the window wants to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// The path as the file system resolves it (`..` and links gone); a file that does not exist
/// yet (a report to write) resolves through its folder.
fn resolve(path: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(path).ok().or_else(|| {
        let parent = std::fs::canonicalize(path.parent()?).ok()?;
        Some(parent.join(path.file_name()?))
    })
}

impl FileGrants {
    /// Grants `paths` for `access`: reading for what was dropped or picked, writing for what a
    /// save dialog returned (which may be read back too).
    pub fn grant(&self, access: Access, paths: impl IntoIterator<Item = PathBuf>) {
        let mut granted = self.0.lock().unwrap();
        for p in paths {
            if let Some(r) = resolve(&p) {
                if access == Access::Write {
                    granted.write.insert(r.clone());
                }
                granted.read.insert(r);
            }
        }
    }

    /// The path, if the user gave it for `access`. Reading: a granted file, or anything inside
    /// a granted folder (a model folder). Writing: only a save dialog's exact target, so a
    /// question file that was dropped can never be overwritten by an export.
    pub fn check(&self, path: &str, access: Access) -> Result<PathBuf, CommandError> {
        let path = PathBuf::from(path);
        let shown = [("path", path.display().to_string())];
        let Some(resolved) = resolve(&path) else {
            return Err(CommandError::coded("files.not_found", format!("{}: no such file or folder", path.display()), &shown));
        };
        let granted = self.0.lock().unwrap();
        let ok = match access {
            Access::Read => resolved.ancestors().any(|a| granted.read.contains(a)),
            Access::Write => granted.write.contains(&resolved),
        };
        match (ok, access) {
            (true, _) => Ok(resolved),
            (false, Access::Read) => {
                let message = format!("{}: Ponder may only open files you drop on its window or pick", path.display());
                Err(CommandError::coded("files.not_granted", message, &shown))
            }
            (false, Access::Write) => {
                let message = format!("{}: Ponder may only write where you chose to save", path.display());
                Err(CommandError::coded("files.not_granted_write", message, &shown))
            }
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
        let refused = g.check(&s(&set), Access::Read).unwrap_err();
        assert!(refused.code == "files.not_granted" && refused.message.contains("only open files you drop"), "{refused:?}");
        g.grant(Access::Read, [set.clone(), model.clone()]);
        g.grant(Access::Write, [dir.path().join("report.md")]);
        assert!(g.check(&s(&set), Access::Read).is_ok());
        assert!(g.check(&s(&model.join("config.json")), Access::Read).is_ok());
        assert!(g.check(&s(&dir.path().join("report.md")), Access::Write).is_ok(), "a save target that does not exist yet");
        assert!(g.check(&s(&other), Access::Read).is_err());
        // No way around it with `..`.
        assert!(g.check(&format!("{}/../secret.txt", model.display()), Access::Read).is_err());
        // What was dropped or picked to read is not writable: an export cannot overwrite it.
        let no_write = g.check(&s(&set), Access::Write).unwrap_err();
        assert!(
            no_write.code == "files.not_granted_write" && no_write.message.contains("only write where you chose"),
            "{no_write:?}"
        );
        assert!(g.check(&s(&model.join("config.json")), Access::Write).is_err(), "a folder grants no writes inside it");
        let missing = g.check("/nonexistent/file.csv", Access::Read).unwrap_err();
        assert!(missing.code == "files.not_found" && missing.params["path"] == "/nonexistent/file.csv", "{missing:?}");
    }
}
