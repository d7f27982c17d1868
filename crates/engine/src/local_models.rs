//! GGUF files already on this computer: in the Hugging Face cache (shared with other tools), in
//! LM Studio's model folders, in Ollama's store (whose manifests name the GGUF blobs), and in
//! folders the user adds. Only names and places are read here; nothing is copied or moved, and
//! the caller inspects each file ([`crate::loader::inspect_runnable`]) to say what it is.

use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Where a model was found.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    HuggingFace,
    LmStudio,
    Ollama,
    /// A folder the user added.
    Folder,
}

/// One GGUF file and how the tool that keeps it names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    pub source: Source,
    /// The repository (`Qwen/Qwen2.5-0.5B-Instruct-GGUF`), Ollama's `model:tag`, or the
    /// folder the file is in.
    pub origin: String,
}

/// The folders to look in.
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// The Hugging Face hub cache (`…/huggingface/hub`).
    pub hf_hub: Option<PathBuf>,
    /// LM Studio's model folders (`publisher/repository/*.gguf` inside).
    pub lm_studio: Vec<PathBuf>,
    /// Ollama's model stores (`manifests/` and `blobs/` inside).
    pub ollama: Vec<PathBuf>,
    /// Folders the user added, searched a few levels deep.
    pub folders: Vec<PathBuf>,
}

/// How deep a user's folder is searched: `models/publisher/repo/file.gguf` is three levels down.
const FOLDER_DEPTH: usize = 4;

impl Places {
    /// Each tool's own folders for this user, as the tools' environment variables and defaults
    /// put them (`HF_HOME`/`HF_HUB_CACHE`, `OLLAMA_MODELS`, LM Studio's `~/.lmstudio/models` and
    /// its older `~/.cache/lm-studio/models`, and Ollama's system service's store), plus the
    /// user's folders.
    pub fn standard(folders: Vec<PathBuf>) -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let under_home = |rel: &str| home.as_ref().map(|h| h.join(rel));
        let ollama = match std::env::var_os("OLLAMA_MODELS") {
            Some(dir) => vec![PathBuf::from(dir)],
            None => under_home(".ollama/models").into_iter().chain([PathBuf::from("/usr/share/ollama/.ollama/models")]).collect(),
        };
        Self {
            hf_hub: Some(hf_hub::Cache::from_env().path().clone()),
            lm_studio: [".lmstudio/models", ".cache/lm-studio/models"].iter().filter_map(|r| under_home(r)).collect(),
            ollama,
            folders,
        }
    }
}

/// Every GGUF file in those places, each once (a file reached twice, through a link or two
/// places, keeps its first finding), in the order: Hugging Face, LM Studio, Ollama, folders.
/// Folders that do not exist or cannot be read are skipped.
pub fn scan(places: &Places) -> Vec<Found> {
    let mut found = Vec::new();
    if let Some(hub) = &places.hf_hub {
        hugging_face(hub, &mut found);
    }
    for dir in &places.lm_studio {
        for path in gguf_files(dir, 3) {
            let origin =
                path.parent().and_then(|p| p.strip_prefix(dir).ok()).map(|p| p.display().to_string()).unwrap_or_default();
            found.push(Found { path, source: Source::LmStudio, origin });
        }
    }
    for dir in &places.ollama {
        ollama(dir, &mut found);
    }
    for dir in &places.folders {
        for path in gguf_files(dir, FOLDER_DEPTH) {
            found.push(Found { path, source: Source::Folder, origin: dir.display().to_string() });
        }
    }
    let mut seen = HashSet::new();
    found.retain(|f| seen.insert(std::fs::canonicalize(&f.path).unwrap_or_else(|_| f.path.clone())));
    found
}

/// `models--Org--Name/snapshots/<revision>/…/*.gguf`, as hf-hub, huggingface_hub and llama.cpp
/// lay the cache out (the snapshot files are links to `blobs/`).
fn hugging_face(hub: &Path, found: &mut Vec<Found>) {
    for repo in sorted_entries(hub) {
        let Some(name) = repo.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix("models--")) else { continue };
        let origin = name.replacen("--", "/", 1);
        for snapshot in sorted_entries(&repo.join("snapshots")) {
            for path in gguf_files(&snapshot, 2) {
                found.push(Found { path, source: Source::HuggingFace, origin: origin.clone() });
            }
        }
    }
}

/// `manifests/<registry>/<namespace>/<model>/<tag>` are JSON files whose layer of media type
/// `application/vnd.ollama.image.model` names the GGUF blob: `blobs/sha256-<hex>`.
fn ollama(store: &Path, found: &mut Vec<Found>) {
    let manifests = store.join("manifests");
    for manifest in files_under(&manifests, 4) {
        let Ok(text) = std::fs::read_to_string(&manifest) else { continue };
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
        let Some(layers) = json["layers"].as_array() else { continue };
        let model = layers.iter().find(|l| l["mediaType"] == "application/vnd.ollama.image.model");
        let Some(digest) = model.and_then(|l| l["digest"].as_str()) else { continue };
        let blob = store.join("blobs").join(digest.replace(':', "-"));
        if !blob.is_file() {
            continue;
        }
        // …/<namespace>/<model>/<tag>: "qwen2.5:0.5b", with the namespace unless it is the
        // default "library", as `ollama list` shows it.
        let parts: Vec<String> = manifest
            .strip_prefix(&manifests)
            .map(|p| p.iter().map(|s| s.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let origin = match parts.as_slice() {
            [.., ns, model, tag] if ns == "library" => format!("{model}:{tag}"),
            [.., ns, model, tag] => format!("{ns}/{model}:{tag}"),
            _ => manifest.display().to_string(),
        };
        found.push(Found { path: blob, source: Source::Ollama, origin });
    }
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
    entries.sort();
    entries
}

/// Regular files (or links to them) at most `depth` levels below `dir`, sorted; hidden
/// folders are skipped.
fn files_under(dir: &Path, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in sorted_entries(dir) {
        let hidden = entry.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'));
        // A link's target decides: the HF cache's snapshot files are links to blobs.
        if entry.is_file() {
            out.push(entry);
        } else if entry.is_dir() && depth > 1 && !hidden {
            out.extend(files_under(&entry, depth - 1));
        }
    }
    out
}

fn gguf_files(dir: &Path, depth: usize) -> Vec<PathBuf> {
    files_under(dir, depth).into_iter().filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("gguf"))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"GGUF").unwrap();
    }

    #[test]
    fn each_layout_is_read_as_its_tool_writes_it() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        // Hugging Face: the snapshot's file is a link to the blob.
        let blob = root.join("hub/models--Qwen--Qwen2.5-0.5B-Instruct-GGUF/blobs/abc");
        touch(&blob);
        let snap = root.join("hub/models--Qwen--Qwen2.5-0.5B-Instruct-GGUF/snapshots/rev1/qwen2.5-0.5b-instruct-q4_k_m.gguf");
        std::fs::create_dir_all(snap.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&blob, &snap).unwrap();
        touch(&root.join("hub/datasets--x--y/snapshots/r/data.gguf"));
        // LM Studio: publisher/repository/file.
        touch(&root.join("lms/lmstudio-community/Qwen3-4B-GGUF/Qwen3-4B-Q4_K_M.gguf"));
        touch(&root.join("lms/lmstudio-community/Qwen3-4B-GGUF/README.md"));
        // Ollama: a manifest naming its model blob, and one whose blob is gone.
        let digest = "sha256:0123abcd";
        touch(&root.join("ollama/blobs/sha256-0123abcd"));
        let manifest = serde_json::json!({"layers": [
            {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:ffff"},
            {"mediaType": "application/vnd.ollama.image.model", "digest": digest}]});
        let m = root.join("ollama/manifests/registry.ollama.ai/library/qwen2.5/0.5b");
        std::fs::create_dir_all(m.parent().unwrap()).unwrap();
        std::fs::write(&m, manifest.to_string()).unwrap();
        let gone = root.join("ollama/manifests/registry.ollama.ai/someone/gone/latest");
        std::fs::create_dir_all(gone.parent().unwrap()).unwrap();
        std::fs::write(
            &gone,
            serde_json::json!({"layers": [{"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:99"}]})
                .to_string(),
        )
        .unwrap();
        // A user's folder, with a file nested two levels down and a hidden folder skipped.
        touch(&root.join("mine/a/b/Tiny.GGUF"));
        touch(&root.join("mine/.trash/old.gguf"));
        touch(&root.join("mine/notes.txt"));

        let places = Places {
            hf_hub: Some(root.join("hub")),
            lm_studio: vec![root.join("lms"), root.join("missing")],
            ollama: vec![root.join("ollama")],
            folders: vec![root.join("mine")],
        };
        let found: Vec<(Source, String, String)> = scan(&places)
            .into_iter()
            .map(|f| (f.source, f.origin, f.path.strip_prefix(root).unwrap().display().to_string()))
            .collect();
        let mine = root.join("mine").display().to_string();
        assert_eq!(
            found,
            vec![
                (
                    Source::HuggingFace,
                    "Qwen/Qwen2.5-0.5B-Instruct-GGUF".into(),
                    "hub/models--Qwen--Qwen2.5-0.5B-Instruct-GGUF/snapshots/rev1/qwen2.5-0.5b-instruct-q4_k_m.gguf".into()
                ),
                (
                    Source::LmStudio,
                    "lmstudio-community/Qwen3-4B-GGUF".into(),
                    "lms/lmstudio-community/Qwen3-4B-GGUF/Qwen3-4B-Q4_K_M.gguf".into()
                ),
                (Source::Ollama, "qwen2.5:0.5b".into(), "ollama/blobs/sha256-0123abcd".into()),
                (Source::Folder, mine, "mine/a/b/Tiny.GGUF".into()),
            ]
        );
    }

    #[test]
    fn a_file_reached_twice_is_listed_once() {
        let d = tempfile::tempdir().unwrap();
        touch(&d.path().join("models/m.gguf"));
        std::os::unix::fs::symlink(d.path().join("models"), d.path().join("alias")).unwrap();
        let places = Places { folders: vec![d.path().join("models"), d.path().join("alias")], ..Default::default() };
        assert_eq!(scan(&places).len(), 1);
    }
}
