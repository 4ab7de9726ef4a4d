//! A file appended at a known position, with zeros written ahead of the data.

use crate::error::{Error, Result};
use crate::storage::{OpenMode, Storage, StorageFile};
use std::path::{Path, PathBuf};

/// Batches smaller than this grow the file with zeros ahead of the data, so the syncs of
/// later batches change no file size (on ext4 a size change costs a journal commit, measured
/// here at about 145 µs a sync, about what writing 64 KiB costs). A larger batch pays for its
/// own size change once; zero-filling ahead of it would only write every byte twice.
const ZERO_FILL_BELOW: usize = 64 << 10;

static ZEROS: [u8; 64 << 10] = [0u8; 64 << 10];

/// How far ahead of the data a file is zero-filled: the space ahead grows with the file.
///
/// When a small batch crosses the zero-filled space, the file is zero-filled up to
/// `round_up(end + min(step, end), block)`: a new file fills its first block, and each later
/// extension at least doubles the file until `step` bytes are kept ahead. So a small session
/// costs a block, a busy one keeps the sync floor that zero-filling buys, and the zeros after
/// the data of a file never exceed [`Prealloc::max_ahead`] of its data end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prealloc {
    /// The most bytes of zeros kept ahead of the data; 0 for none.
    pub step: u64,
    /// File lengths are zero-filled up to a multiple of this (at least 1).
    pub block: u64,
    /// Never zero-fill past this length.
    pub cap: u64,
}

impl Prealloc {
    /// The length a file whose data ends at `end` is zero-filled to.
    pub fn target(&self, end: u64) -> u64 {
        if self.step == 0 {
            return end;
        }
        let block = self.block.max(1);
        let want = end.saturating_add(self.step.min(end));
        let rounded = want.div_ceil(block).saturating_mul(block);
        rounded.min(self.cap).max(end)
    }

    /// The most zeros this policy leaves after data ending at `end`.
    pub fn max_ahead(&self, end: u64) -> u64 {
        self.target(end) - end
    }
}

/// An open file being appended to, and how far it is written.
pub(crate) struct AppendFile {
    file: Box<dyn StorageFile>,
    path: PathBuf,
    pos: u64,
    /// Every byte before this offset is durable: the end of data at the last sync that
    /// succeeded (or that the opener vouched for).
    synced: u64,
    allocated: u64,
    prealloc: Prealloc,
}

impl AppendFile {
    /// Creates a file by the write protocol: exclusive create, `head` and zeros ahead,
    /// `fdatasync`, then `fsync` of its directory, before anything is appended.
    pub fn create(
        storage: &dyn Storage,
        path: &Path,
        head: &[u8],
        prealloc: Prealloc,
    ) -> Result<AppendFile> {
        let file = storage
            .open(path, OpenMode::CreateNew)
            .map_err(|e| Error::io(path, "create", e))?;
        // The header goes in a write of its own: a crash that tears the zeros after it then
        // leaves an intact header and a torn tail, which recovery cuts, where one write of both
        // could leave a header torn with garbage after it, which it must refuse.
        file.write_all_at(head, 0)
            .map_err(|e| Error::io(path, "write header", e))?;
        let pos = head.len() as u64;
        let allocated = prealloc.target(pos);
        zero_fill(&*file, path, pos, allocated)?;
        file.sync_data()
            .map_err(|e| Error::io(path, "fdatasync", e))?;
        let dir = path.parent().unwrap_or(Path::new(""));
        storage
            .sync_dir(dir)
            .map_err(|e| Error::io(dir, "fsync directory", e))?;
        Ok(AppendFile {
            file,
            path: path.to_owned(),
            pos,
            synced: pos,
            allocated,
            prealloc,
        })
    }

    /// Opens an existing file whose data ends at `data_end` (everything after it is zeros);
    /// the caller makes the data durable (or knows it is) before anything builds on it.
    pub fn open(
        storage: &dyn Storage,
        path: &Path,
        data_end: u64,
        prealloc: Prealloc,
    ) -> Result<AppendFile> {
        let file = storage
            .open(path, OpenMode::ReadWrite)
            .map_err(|e| Error::io(path, "open", e))?;
        let allocated = file.size().map_err(|e| Error::io(path, "stat", e))?;
        Ok(AppendFile {
            file,
            path: path.to_owned(),
            pos: data_end,
            synced: data_end,
            allocated: allocated.max(data_end),
            prealloc,
        })
    }

    /// The file, relative to the root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The offset before which every byte is durable (see the field).
    pub fn synced_end(&self) -> u64 {
        self.synced
    }

    /// Writes `bytes` after the data; small batches also zero-fill ahead. Not durable until synced.
    pub fn append(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let end = self.pos + bytes.len() as u64;
        self.file
            .write_all_at(bytes, self.pos)
            .map_err(|e| Error::io(&self.path, "write", e))?;
        self.pos = end;
        if end > self.allocated {
            self.allocated = if bytes.len() < ZERO_FILL_BELOW {
                let target = self.prealloc.target(end);
                zero_fill(&*self.file, &self.path, end, target)?;
                target
            } else {
                end
            };
        }
        Ok(())
    }

    /// Writes the last bytes the file will get, cuts the zeros after them and makes everything
    /// durable: the end of a sealed file. Nothing is zero-filled after them.
    pub fn finish(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all_at(bytes, self.pos)
            .map_err(|e| Error::io(&self.path, "write", e))?;
        self.pos += bytes.len() as u64;
        self.file
            .set_len(self.pos)
            .map_err(|e| Error::io(&self.path, "truncate", e))?;
        self.allocated = self.pos;
        self.sync()
    }

    /// Writes a new header of the same length over the old one and syncs it, before anything
    /// follows it. Only for a file that holds nothing but its header: a crash that tears the
    /// write leaves a header that does not decode over zeros, a torn create.
    pub fn rewrite_header(&mut self, head: &[u8]) -> Result<()> {
        debug_assert_eq!(
            self.pos,
            head.len() as u64,
            "only a file holding just its header"
        );
        // The old header is being overwritten: nothing is known durable until the sync.
        self.synced = 0;
        self.file
            .write_all_at(head, 0)
            .map_err(|e| Error::io(&self.path, "write header", e))?;
        self.sync()
    }

    /// Cuts the zeros after the data: a cleanly closed file holds no preallocated space. The cut
    /// is not synced: the caller has synced the data first, so a crash that loses the cut leaves
    /// zeros after durable data, which recovery reads as the end of data, and the file system
    /// writes the new length back on its own.
    pub fn cut(&mut self) -> Result<()> {
        if self.allocated <= self.pos {
            return Ok(());
        }
        self.file
            .set_len(self.pos)
            .map_err(|e| Error::io(&self.path, "truncate", e))?;
        self.allocated = self.pos;
        Ok(())
    }

    /// `fdatasync`.
    pub fn sync(&mut self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(&self.path, "fdatasync", e))?;
        debug_assert!(
            self.synced <= self.pos,
            "a file's durable part only grows by syncs"
        );
        self.synced = self.pos;
        Ok(())
    }
}

fn zero_fill(file: &dyn StorageFile, path: &Path, from: u64, to: u64) -> Result<()> {
    let mut at = from;
    while at < to {
        let n = (to - at).min(ZEROS.len() as u64) as usize;
        file.write_all_at(&ZEROS[..n], at)
            .map_err(|e| Error::io(path, "preallocate", e))?;
        at += n as u64;
    }
    Ok(())
}
