//! The one atomic-rewrite helper: temporary file, `fdatasync`, rename, `fsync` of the directory.

use super::{OpenMode, Storage};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes` so that a crash leaves either the old file or the new one.
pub fn write_atomically(storage: &dyn Storage, path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp: PathBuf = path.with_file_name(tmp_name);
    let parent = path.parent().unwrap_or(Path::new(""));
    if storage
        .entry_kind(&tmp)
        .map_err(|e| Error::io(&tmp, "stat", e))?
        .is_some()
    {
        // Left by a crash before its rename: never the live file, safe to replace.
        storage
            .remove_file(&tmp)
            .map_err(|e| Error::io(&tmp, "remove", e))?;
    }
    let file = storage
        .open(&tmp, OpenMode::CreateNew)
        .map_err(|e| Error::io(&tmp, "create", e))?;
    file.write_all_at(bytes, 0)
        .map_err(|e| Error::io(&tmp, "write", e))?;
    file.sync_data()
        .map_err(|e| Error::io(&tmp, "fdatasync", e))?;
    drop(file);
    storage
        .rename(&tmp, path)
        .map_err(|e| Error::io(path, "rename", e))?;
    storage
        .sync_dir(parent)
        .map_err(|e| Error::io(parent, "fsync directory", e))
}
