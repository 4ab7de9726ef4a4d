//! Carrying out the repairs the table allows: quarantine, then cut or remove.

use super::{RecoveryReport, Repair};
use crate::error::{Error, Result};
use crate::storage::{write_atomically, OpenMode, Storage, StorageFile};
use std::path::{Path, PathBuf};

/// What separates a file's name from the offset in the name of its quarantine file.
pub const TORN_INFIX: &str = ".torn-";

/// The quarantine file for bytes cut from `file` at `offset`.
pub fn torn_file_name(file_name: &str, offset: u64) -> String {
    format!("{file_name}{TORN_INFIX}{offset}")
}

fn parent(file: &Path) -> &Path {
    file.parent().unwrap_or(Path::new(""))
}

/// Carries out repairs: each torn byte range is first copied to a fsynced quarantine file.
pub fn apply(storage: &dyn Storage, repairs: Vec<Repair>) -> Result<RecoveryReport> {
    let mut report = RecoveryReport::default();
    for repair in repairs {
        match &repair {
            Repair::TruncateTornTail { file, offset, len } => {
                let f = storage
                    .open(file, OpenMode::ReadWrite)
                    .map_err(|e| Error::io(file, "open", e))?;
                let mut torn = vec![0u8; *len as usize];
                read_exact(&*f, file, &mut torn, *offset)?;
                report
                    .quarantined
                    .push(quarantine(storage, file, *offset, &torn)?);
                f.set_len(*offset)
                    .map_err(|e| Error::io(file, "truncate", e))?;
                f.sync_data().map_err(|e| Error::io(file, "fdatasync", e))?;
            }
            Repair::RemoveTornCreate { file } => {
                // As far as a reader reads it: a sparse file's zeros are not copied out whole.
                let bytes = crate::storage::data_end::read_data(storage, file)
                    .map_err(|e| Error::io(file, "read", e))?;
                report
                    .quarantined
                    .push(quarantine(storage, file, 0, &bytes)?);
                storage
                    .remove_file(file)
                    .map_err(|e| Error::io(file, "remove", e))?;
                let dir = parent(file);
                storage
                    .sync_dir(dir)
                    .map_err(|e| Error::io(dir, "fsync directory", e))?;
            }
        }
        report.repairs.push(repair);
    }
    Ok(report)
}

fn read_exact(f: &dyn StorageFile, file: &Path, buf: &mut [u8], offset: u64) -> Result<()> {
    f.read_exact_at(buf, offset).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            Error::corrupt(file, offset, format!("file shorter than its scan: {e}"))
        }
        _ => Error::io(file, "read", e),
    })
}

/// Writes `bytes` to `<file>.torn-<offset>` beside the file (or `<file>.torn-<offset>.<n>` if
/// that already holds other bytes) and makes it durable. The copy is written to a temporary
/// sibling and renamed, so a crash leaves the whole copy or none under the final name (a torn
/// copy there would read as another tear and stay beside the next one).
fn quarantine(storage: &dyn Storage, segment: &Path, offset: u64, bytes: &[u8]) -> Result<PathBuf> {
    let name = segment
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = parent(segment);
    let first = dir.join(torn_file_name(&name, offset));
    let mut n = 0u32;
    loop {
        let path = match n {
            0 => first.clone(),
            n => dir.join(format!("{}.{n}", torn_file_name(&name, offset))),
        };
        match copied_before(storage, &path, bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&path, "read", e)),
            // Copied by an earlier recovery interrupted before its cut (whole, or a prefix left
            // by an older version): written again, as its rename may not be durable yet.
            Ok(true) => {}
            // Another tear at the same offset, kept: never overwrite quarantined bytes.
            Ok(false) => {
                n += 1;
                continue;
            }
        }
        write_atomically(storage, &path, bytes)?;
        return Ok(path);
    }
}

/// Whether the file at `path` holds a prefix of `bytes` (a copy of them an earlier recovery
/// began). One longer than them is another tear's and is not read: its length is whatever the
/// file claims.
fn copied_before(storage: &dyn Storage, path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    let file = storage.open(path, crate::storage::OpenMode::Read)?;
    let len = file.size()?;
    if len > bytes.len() as u64 {
        return Ok(false);
    }
    let mut old = vec![0u8; len as usize];
    let n = file.read_full_at(&mut old, 0)?;
    Ok(bytes.starts_with(&old[..n]))
}
