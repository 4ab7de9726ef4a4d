//! The storage seam: the one door through which every byte the engine reads or writes passes.
//!
//! Paths handed to a [`Storage`] are relative to the root it was made for, so every error and
//! every finding names files the way a person looking at the root sees them. Nothing outside
//! this module touches `std::fs`. A second implementation (simulated files that keep durable
//! and volatile bytes apart, for crash tests) must keep the same contract, stated on each method.

mod atomic;
pub(crate) mod buffer;
mod cut;
pub mod data_end;
#[cfg(target_os = "linux")]
mod direct;
#[cfg(target_os = "linux")]
mod holes;
mod mem;
mod real;
#[cfg(feature = "test")]
pub mod sim;

pub use atomic::{replace_cache_file, write_atomically};
pub use cut::{Cut, CutView};
pub use mem::MemStorage;
pub use real::RealStorage;
#[cfg(feature = "test")]
pub use sim::{Fault, FaultKind, SimRng, SimStorage, Tear};

use std::io;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// How [`Storage::open`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Create the file; fail with `AlreadyExists` if it exists. Read and write.
    CreateNew,
    /// Open an existing file for reading and writing; fail with `NotFound` if absent.
    ReadWrite,
    /// Open an existing file for reading only.
    Read,
}

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    /// Anything else (symlink, socket, …): never followed. Also an entry of a real directory
    /// whose name is not UTF-8, listed by its name made lossy: no name makalog writes is one,
    /// and such a name cannot be opened through the seam.
    Other,
}

/// One entry of [`Storage::list_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub kind: EntryKind,
}

/// An open file. Offsets are absolute; there is no cursor, so one handle serves many readers.
pub trait StorageFile: Send + Sync {
    /// The file's current length in bytes (written bytes count, synced or not).
    fn size(&self) -> io::Result<u64>;
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read (0 at the end).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// Writes all of `buf` at `offset`, extending the file if needed. Not durable until
    /// [`StorageFile::sync_data`] returns `Ok`. On error, any prefix of `buf` may have been written.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Makes every byte written so far, and the file's length, durable (`fdatasync`). An error
    /// means the written bytes may or may not be durable; the caller must not retry and carry on.
    fn sync_data(&self) -> io::Result<()>;
    /// Sets the file's length, cutting or zero-extending it. Durable only after `sync_data`.
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Reads what the disk itself holds at `offset`, past any page cache (up to `buf.len()`
    /// bytes; how many, fewer where the persisted file ends), or `None` where the storage
    /// cannot tell it from what reads see. After a failed sync the kernel may keep serving
    /// bytes the disk never got; this is how an opener finds them.
    fn read_persisted_at(&self, buf: &mut [u8], offset: u64) -> io::Result<Option<usize>> {
        let _ = (buf, offset);
        Ok(None)
    }

    /// The next stretch of the file at or after `offset` that may hold anything but zeros, as
    /// `(start, end)` with `offset <= start < end`, or `None` when only zeros follow. A file
    /// system's holes (ranges of a sparse file never written, which read as zeros) are left out
    /// where the storage can tell them; otherwise the stretch is the rest of the file.
    fn data_after(&self, offset: u64) -> io::Result<Option<(u64, u64)>> {
        let size = self.size()?;
        Ok((offset < size).then_some((offset, size)))
    }

    /// Reads at `offset` until `buf` is full or the file ends; returns how many bytes were read.
    fn read_full_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.read_at(&mut buf[done..], offset + done as u64)? {
                0 => break,
                n => done += n,
            }
        }
        Ok(done)
    }

    /// Reads exactly `buf.len()` bytes at `offset`; `UnexpectedEof` if the file ends first.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let done = self.read_full_at(buf, offset)?;
        if done < buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the file ends at byte {}", offset + done as u64),
            ));
        }
        Ok(())
    }
}

/// Bytes of a whole file: memory-mapped where the implementation can, owned otherwise.
pub enum FileBytes {
    /// A read-only mapping. Only immutable (sealed) files are mapped.
    Mapped(memmap2::Mmap),
    /// A copy in memory.
    Owned(Vec<u8>),
    /// A range of a buffer shared with other files (a bundle's entries held in memory).
    Shared(std::sync::Arc<Vec<u8>>, std::ops::Range<usize>),
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m,
            FileBytes::Owned(v) => v,
            FileBytes::Shared(data, range) => &data[range.clone()],
        }
    }
}

/// An exclusive lock on a file; dropping it releases the lock.
pub trait StorageLock: Send + Sync {}

/// The file system as the engine sees it. All paths are relative to the storage's root; the
/// empty path is the root itself.
pub trait Storage: Send + Sync {
    /// Opens a file. With [`OpenMode::CreateNew`] the entry is durable only after
    /// [`Storage::sync_dir`] of its parent.
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn StorageFile>>;
    /// Reads a whole file; an implementation may memory-map it. Call only on files no writer
    /// changes in place while the bytes are held (sealed segments, sidecars replaced by rename);
    /// use [`Storage::read_file`] otherwise. Like [`Storage::read_file`], refuses a file with
    /// more than [`data_end::HOLES_HELD`] bytes of holes the storage can tell.
    fn map_file(&self, path: &Path) -> io::Result<FileBytes>;
    /// Reads a whole file into memory; refuses (`InvalidData`) one with more than
    /// [`data_end::HOLES_HELD`] bytes of holes the storage can tell, unread.
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Creates one directory (its parent must exist); `AlreadyExists` if present. The empty path
    /// creates the root itself, with mode 0700, and makes that creation durable. Other entries
    /// are durable only after [`Storage::sync_dir`] of the parent.
    fn create_dir(&self, path: &Path) -> io::Result<()>;
    /// Renames a file atomically, replacing `to` if present. Durable after `sync_dir` of the parent.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file. Durable after `sync_dir` of the parent.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable (`fsync` on the directory).
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Makes everything written under the root durable, file data and directory entries alike
    /// (`syncfs`): what a new owner does before it reads anything, since a process that died
    /// may have left writes in the page cache that reads see but no sync ever persisted.
    fn sync_all(&self) -> io::Result<()>;
    /// Lists a directory, sorted by name. `NotFound` if it does not exist.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>>;
    /// What is at `path`, or `None` if nothing is.
    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>>;
    /// Takes an exclusive, non-blocking lock on `path`, creating the file (mode 0600) if absent.
    /// `None` while any other holder (another process, or another handle in this one) has it.
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn StorageLock>>>;
    /// True when some holder has the lock of `path` (see [`Storage::try_lock`]); read-only: it
    /// takes no lock and creates nothing. False when `path` does not exist or it cannot tell.
    fn is_locked(&self, path: &Path) -> io::Result<bool>;
    /// A name for this storage's root in messages (the directory path for real files).
    fn describe_root(&self) -> PathBuf;
    /// Whether a run over this storage must replay exactly (the simulated disk: a seed names
    /// one crash scenario), so work that could run on many threads runs on one, in one order.
    fn deterministic(&self) -> bool {
        false
    }
}
