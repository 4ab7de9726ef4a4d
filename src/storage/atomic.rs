//! Replacing a file by rename: durably (temporary file, `fdatasync`, rename, `fsync` of the
//! directory), or, for a file that only caches what is durable elsewhere, without the syncs.

use super::{OpenMode, Storage};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes` so that a crash leaves either the old file or the new one.
pub fn write_atomically(storage: &dyn Storage, path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = write_beside(storage, path, bytes, true)?;
    let parent = path.parent().unwrap_or(Path::new(""));
    storage
        .rename(&tmp, path)
        .map_err(|e| Error::io(path, "rename", e))?;
    storage
        .sync_dir(parent)
        .map_err(|e| Error::io(parent, "fsync directory", e))
}

/// Replaces `path` with `bytes` by rename, syncing nothing: for a cache of what is durable
/// elsewhere (an index sidecar, written only after the segments it covers were synced). A crash
/// may leave the old file, the new one, none, or one whose bytes never reached the disk; a
/// reader checks it (CRCs, covers) and rebuilds it from the durable log when it does not hold.
pub fn replace_cache_file(storage: &dyn Storage, path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = write_beside(storage, path, bytes, false)?;
    storage
        .rename(&tmp, path)
        .map_err(|e| Error::io(path, "rename", e))
}

/// Writes `bytes` to `path`'s temporary sibling, replacing one a crash left, and syncs it if
/// `sync` says; returns its path.
fn write_beside(storage: &dyn Storage, path: &Path, bytes: &[u8], sync: bool) -> Result<PathBuf> {
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp: PathBuf = path.with_file_name(tmp_name);
    let file = match storage.open(&tmp, OpenMode::CreateNew) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Left by a crash before its rename: never the live file, safe to replace.
            storage
                .remove_file(&tmp)
                .map_err(|e| Error::io(&tmp, "remove", e))?;
            storage.open(&tmp, OpenMode::CreateNew)
        }
        other => other,
    }
    .map_err(|e| Error::io(&tmp, "create", e))?;
    file.write_all_at(bytes, 0)
        .map_err(|e| Error::io(&tmp, "write", e))?;
    if sync {
        file.sync_data()
            .map_err(|e| Error::io(&tmp, "fdatasync", e))?;
    }
    Ok(tmp)
}
