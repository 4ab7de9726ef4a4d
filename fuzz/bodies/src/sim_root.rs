//! A simulated root holding given files, durably, as a fuzz input describes them.

use makalog::storage::{OpenMode, SimStorage, Storage};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A simulated file system holding `files` (a later file at a path taken by a directory, or
/// under a path taken by a file, is left out).
pub fn with_files(files: &[(PathBuf, &[u8])]) -> Arc<SimStorage> {
    let storage = Arc::new(SimStorage::new());
    for (path, bytes) in files {
        // A file that cannot be placed is one the root does not hold.
        let _ = place(&storage, path, bytes);
    }
    storage
}

fn place(storage: &SimStorage, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut dir = PathBuf::new();
    if let Some(parent) = path.parent() {
        for part in parent.components() {
            dir.push(part);
            if storage.entry_kind(&dir)?.is_none() {
                storage.create_dir(&dir)?;
            }
        }
    }
    let file = storage.open(path, OpenMode::CreateNew)?;
    file.write_all_at(bytes, 0)?;
    file.sync_data()?;
    storage.sync_all()
}
