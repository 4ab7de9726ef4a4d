//! Opening a file of a root that may be hostile: never through a symlink, never blocking on
//! a FIFO, and never opening what is not a regular file (opening a device runs its driver).

use super::RealStorage;
use crate::storage::OpenMode;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

impl RealStorage {
    /// Opens a regular file: never through a symlink (`O_NOFOLLOW`), never blocking on a FIFO
    /// or a device (`O_NONBLOCK`, which changes nothing for a regular file), and anything that
    /// is not a regular file is refused. An existing entry is looked at first (`lstat`), so a
    /// FIFO or a device is refused without being opened (opening a device runs its driver);
    /// what the entry is once opened is checked again, as it may have been replaced meanwhile.
    pub(super) fn open_regular(&self, path: &Path, mode: OpenMode) -> io::Result<File> {
        let full = self.full(path)?;
        if mode != OpenMode::CreateNew {
            refuse_special(&full)?;
        }
        let mut o = OpenOptions::new();
        match mode {
            OpenMode::CreateNew => o.read(true).write(true).create_new(true).mode(0o600),
            OpenMode::ReadWrite => o.read(true).write(true),
            OpenMode::Read => o.read(true),
        };
        o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        let file = o.open(full).map_err(refused_symlink)?;
        // An exclusive create makes a new regular file or fails (even on a symlink): only an
        // existing entry needs the check.
        if mode != OpenMode::CreateNew {
            regular(&file)?;
        }
        Ok(file)
    }
}

/// `O_NOFOLLOW` on a symlink fails with `ELOOP`: say what it means.
pub(super) fn refused_symlink(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file: a symlink, never followed",
        )
    } else {
        e
    }
}

pub(super) fn regular(file: &File) -> io::Result<()> {
    if file.metadata()?.is_file() {
        Ok(())
    } else {
        Err(not_regular())
    }
}

/// Refuses an existing entry that is neither a regular file nor a symlink (which `O_NOFOLLOW`
/// refuses when it is opened), looked at without opening it.
pub(super) fn refuse_special(full: &Path) -> io::Result<()> {
    let kind = fs::symlink_metadata(full)?.file_type();
    if kind.is_file() || kind.is_symlink() {
        Ok(())
    } else {
        Err(not_regular())
    }
}

fn not_regular() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "not a regular file (a FIFO, device or directory is never read)",
    )
}
