//! Real storage that counts what it is asked to do: `sync_data` calls (and can make them fail
//! from the Nth on), bytes read, and directory syncs by directory (which can be slowed, so
//! concurrent callers pile up behind one); a sync or a look at a path can be held at a gate.

use makalog::storage::{
    DirEntry, EntryKind, FileBytes, OpenMode, RealStorage, Storage, StorageFile, StorageLock,
};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a [`CountingStorage`] was asked to do.
#[derive(Default)]
pub struct Meter {
    /// Bytes returned by `read_at`, `read_persisted_at` and `read_file` (mapped files are not
    /// counted: mapping reads nothing until a page is touched).
    pub read_bytes: AtomicU64,
    /// `list_dir` calls.
    pub listings: AtomicU64,
    /// `map_file` calls by path, those that failed too.
    pub maps: Counts,
    /// Bytes of the files `map_file` mapped (or read, on a storage that does not map).
    pub mapped_bytes: AtomicU64,
    /// `sync_dir` calls by directory.
    pub dir_syncs: Counts,
    /// Every `sync_data` sleeps this long first, so concurrent callers pile up behind one.
    pub slow_sync: Mutex<Option<Duration>>,
    /// The next `sync_data` reports on `entered` that it started, then waits on `release`:
    /// `true` lets it sync, `false` fails it with EIO.
    pub gate: Mutex<Option<SyncGate>>,
    /// Every `sync_dir` of this directory sleeps this long first.
    pub slow_dir: Mutex<Option<(PathBuf, Duration)>>,
    /// The next `entry_kind` of this path reports on `entered` that it started, then waits on
    /// `release`: `true` lets it look, `false` fails it with EIO.
    pub entry_gate: Mutex<Option<(PathBuf, SyncGate)>>,
}

/// See [`Meter::gate`].
pub struct SyncGate {
    pub entered: std::sync::mpsc::Sender<()>,
    pub release: std::sync::mpsc::Receiver<bool>,
}

impl Meter {
    pub fn reads(&self) -> u64 {
        self.read_bytes.load(Ordering::SeqCst)
    }

    pub fn dir_syncs_of(&self, dir: &str) -> u64 {
        count_of(&self.dir_syncs, dir)
    }

    pub fn maps_of(&self, path: &str) -> u64 {
        count_of(&self.maps, path)
    }

    pub fn all_dir_syncs(&self) -> u64 {
        self.dir_syncs.lock().expect("meter").values().sum()
    }
}

/// Real storage that counts `sync_data` calls and can make them fail from the Nth on.
pub struct CountingStorage {
    inner: RealStorage,
    syncs: Arc<AtomicU64>,
    fail_from: u64,
    pub meter: Arc<Meter>,
}

pub struct CountingFile {
    inner: Box<dyn StorageFile>,
    syncs: Arc<AtomicU64>,
    fail_from: u64,
    meter: Arc<Meter>,
}

impl StorageFile for CountingFile {
    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let n = self.inner.read_at(buf, offset)?;
        self.meter.read_bytes.fetch_add(n as u64, Ordering::SeqCst);
        Ok(n)
    }
    /// Past the cache where the file system can (`O_DIRECT`), else through it: the comparison
    /// recovery makes runs on any file system a test runs on, and its reads are counted.
    fn read_persisted_at(&self, buf: &mut [u8], offset: u64) -> io::Result<Option<usize>> {
        let n = match self.inner.read_persisted_at(buf, offset)? {
            Some(n) => n,
            None => self.inner.read_full_at(buf, offset)?,
        };
        self.meter.read_bytes.fetch_add(n as u64, Ordering::SeqCst);
        Ok(Some(n))
    }
    fn data_after(&self, offset: u64) -> io::Result<Option<(u64, u64)>> {
        self.inner.data_after(offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_all_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        if let Some(pause) = *self.meter.slow_sync.lock().expect("meter") {
            std::thread::sleep(pause);
        }
        let gate = self.meter.gate.lock().expect("meter").take();
        if let Some(gate) = gate {
            let _ = gate.entered.send(());
            if !gate.release.recv().unwrap_or(false) {
                return Err(io::Error::other("injected EIO at a gated sync"));
            }
        }
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
            meter: self.meter.clone(),
        }))
    }
    fn map_file(&self, path: &Path) -> io::Result<FileBytes> {
        count(&self.meter.maps, path);
        let bytes = self.inner.map_file(path)?;
        self.meter
            .mapped_bytes
            .fetch_add(bytes.len() as u64, Ordering::SeqCst);
        Ok(bytes)
    }
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let bytes = self.inner.read_file(path)?;
        self.meter
            .read_bytes
            .fetch_add(bytes.len() as u64, Ordering::SeqCst);
        Ok(bytes)
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
        let slow = self.meter.slow_dir.lock().expect("meter").clone();
        if let Some((dir, pause)) = slow {
            if dir == path {
                std::thread::sleep(pause);
            }
        }
        count(&self.meter.dir_syncs, path);
        self.inner.sync_dir(path)
    }
    fn sync_all(&self) -> io::Result<()> {
        self.inner.sync_all()
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        self.meter.listings.fetch_add(1, Ordering::SeqCst);
        self.inner.list_dir(path)
    }
    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        let gate = {
            let mut g = self.meter.entry_gate.lock().expect("meter");
            match g.as_ref() {
                Some((p, _)) if p == path => g.take().map(|(_, gate)| gate),
                _ => None,
            }
        };
        if let Some(gate) = gate {
            let _ = gate.entered.send(());
            if !gate.release.recv().unwrap_or(false) {
                return Err(io::Error::other("injected EIO at a gated look"));
            }
        }
        self.inner.entry_kind(path)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn StorageLock>>> {
        self.inner.try_lock(path)
    }
    fn is_locked(&self, path: &Path) -> io::Result<bool> {
        self.inner.is_locked(path)
    }
    fn describe_root(&self) -> PathBuf {
        self.inner.describe_root()
    }
}

type Counts = Mutex<BTreeMap<PathBuf, u64>>;

fn count(counts: &Counts, path: &Path) {
    *counts
        .lock()
        .expect("meter")
        .entry(path.to_owned())
        .or_default() += 1;
}

fn count_of(counts: &Counts, path: &str) -> u64 {
    let counts = counts.lock().expect("meter");
    counts.get(Path::new(path)).copied().unwrap_or(0)
}

pub fn counting(root: PathBuf, fail_from: u64) -> (Arc<CountingStorage>, Arc<AtomicU64>) {
    let syncs = Arc::new(AtomicU64::new(0));
    let s = CountingStorage {
        inner: RealStorage::new(root),
        syncs: syncs.clone(),
        fail_from,
        meter: Arc::default(),
    };
    (Arc::new(s), syncs)
}
