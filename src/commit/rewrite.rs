//! Writing a log's files again after a write or sync of them failed, so that what reads back
//! from the page cache is what the disk holds: in this process, from where the failure was
//! told; after a process that died, from where the cache and the disk are found to differ.
//!
//! After a failed `fsync` the kernel may mark the unsynced pages clean: they stay readable,
//! but no later sync writes them, and a power loss takes them away (fsyncgate). Reopening such
//! a log in the same process would read them as if durable and acknowledge records after them.
//! Writing every byte back makes the pages dirty again, and a sync that succeeds then persists
//! what reads see; recovery then judges those bytes as it judges any tail.

use crate::error::{Error, Result};
use crate::storage::{OpenMode, Storage};
use std::path::{Path, PathBuf};

/// Bytes copied per read and write.
const CHUNK: usize = 1 << 20;

/// Rewrites in place, and syncs, each file's bytes from its offset on, then syncs the
/// directories that hold them. Files that no longer exist are skipped.
pub(crate) fn rewrite_and_sync(storage: &dyn Storage, files: &[(PathBuf, u64)]) -> Result<()> {
    let mut dirs: Vec<&Path> = Vec::new();
    for (path, from) in files {
        let file = match storage.open(path, OpenMode::ReadWrite) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(path, "open", e)),
        };
        let size = file.size().map_err(|e| Error::io(path, "stat", e))?;
        let mut buf = vec![0u8; CHUNK.min(size.saturating_sub(*from) as usize)];
        let mut at = *from;
        while at < size {
            let n = CHUNK.min((size - at) as usize);
            let chunk = &mut buf[..n];
            file.read_exact_at(chunk, at)
                .map_err(|e| Error::io(path, "read", e))?;
            file.write_all_at(chunk, at)
                .map_err(|e| Error::io(path, "write", e))?;
            at += n as u64;
        }
        file.sync_data()
            .map_err(|e| Error::io(path, "fdatasync", e))?;
        let dir = path.parent().unwrap_or(Path::new(""));
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    for dir in dirs {
        storage
            .sync_dir(dir)
            .map_err(|e| Error::io(dir, "fsync directory", e))?;
    }
    Ok(())
}

/// Compares `path`'s bytes in `[from, to)` as reads see them with what the disk holds, and
/// from the first that differs (or where the persisted file ends short) writes the file back
/// and syncs it, as [`rewrite_and_sync`]. A process whose sync failed and that then died leaves
/// such bytes: no later sync writes pages the kernel marked clean, and an opener would build
/// on them. No byte an acknowledgement covered can differ (its sync succeeded), so only bytes
/// no one was told are durable are written again. True when something was written; nothing is
/// done where the storage cannot read past its cache, or the file is gone. Nothing is compared
/// past where a reader's bytes end ([`needed_end`](crate::storage::data_end::needed_end)):
/// what lies there reads as zeros and no reader reads it, however long the file says it is.
pub(crate) fn write_back_unpersisted(
    storage: &dyn Storage,
    path: &Path,
    from: u64,
    to: u64,
) -> Result<bool> {
    let file = match storage.open(path, OpenMode::Read) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(path, "open", e)),
    };
    let needed = crate::storage::data_end::needed_end(&*file, from);
    let to = to.min(needed.map_err(|e| Error::io(path, "read", e))?);
    let room = CHUNK.min(to.saturating_sub(from) as usize);
    let (mut cached, mut persisted) = (vec![0u8; room], vec![0u8; room]);
    let mut at = from;
    while at < to {
        let n = CHUNK.min((to - at) as usize);
        file.read_exact_at(&mut cached[..n], at)
            .map_err(|e| Error::io(path, "read", e))?;
        let got = match file.read_persisted_at(&mut persisted[..n], at) {
            Ok(Some(got)) => got,
            Ok(None) => return Ok(false),
            // A direct read first writes out dirty pages of its range, and reports a writeback
            // that failed earlier: what follows is not known to be on disk.
            Err(e) if e.raw_os_error() == Some(libc::EIO) => 0,
            Err(e) => return Err(Error::io(path, "read past the cache", e)),
        };
        let differs = cached[..got]
            .iter()
            .zip(&persisted[..got])
            .position(|(c, p)| c != p)
            .or((got < n).then_some(got));
        if let Some(i) = differs {
            drop(file);
            rewrite_and_sync(storage, &[(path.to_owned(), at + i as u64)])?;
            return Ok(true);
        }
        at += n as u64;
    }
    Ok(false)
}
