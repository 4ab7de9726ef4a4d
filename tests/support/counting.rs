//! Real storage that counts `sync_data` calls and can make them fail from the Nth on.

use makalog::storage::{
    DirEntry, EntryKind, FileBytes, OpenMode, RealStorage, Storage, StorageFile, StorageLock,
};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Real storage that counts `sync_data` calls and can make them fail from the Nth on.
pub struct CountingStorage {
    inner: RealStorage,
    syncs: Arc<AtomicU64>,
    fail_from: u64,
}

pub struct CountingFile {
    inner: Box<dyn StorageFile>,
    syncs: Arc<AtomicU64>,
    fail_from: u64,
}

impl StorageFile for CountingFile {
    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner.read_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_all_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        let n = self.syncs.fetch_add(1, Ordering::SeqCst) + 1;
        if n >= self.fail_from {
            return Err(io::Error::other("injected EIO"));
        }
        self.inner.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
}

impl Storage for CountingStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(CountingFile {
            inner: self.inner.open(path, mode)?,
            syncs: self.syncs.clone(),
            fail_from: self.fail_from,
        }))
    }
    fn map_file(&self, path: &Path) -> io::Result<FileBytes> {
        self.inner.map_file(path)
    }
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read_file(path)
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_dir(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        self.inner.list_dir(path)
    }
    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        self.inner.entry_kind(path)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn StorageLock>>> {
        self.inner.try_lock(path)
    }
    fn describe_root(&self) -> PathBuf {
        self.inner.describe_root()
    }
}

pub fn counting(root: PathBuf, fail_from: u64) -> (Arc<CountingStorage>, Arc<AtomicU64>) {
    let syncs = Arc::new(AtomicU64::new(0));
    let s = CountingStorage {
        inner: RealStorage::new(root),
        syncs: syncs.clone(),
        fail_from,
    };
    (Arc::new(s), syncs)
}
