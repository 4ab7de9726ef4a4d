//! The single-owner lease: one process (one handle) may write a root at a time.

use super::{create_or_open_root, read_marker, RootMarker, MARKER_FILE};
use crate::commit::SharedDirSync;
use crate::error::{Error, Result};
use crate::storage::{EntryKind, RealStorage, Storage, StorageLock};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The lock file inside the root.
pub const LOCK_FILE: &str = "owner.lock";

/// The right to write a root. Writers opened through it keep the lease alive, so the lock is
/// released only when the owner and every writer it opened are gone (in-flight writes finish).
#[derive(Clone)]
pub struct Owner {
    lease: Arc<Lease>,
}

/// What writers hold: the storage, the marker, the lock, and which logs are open for writing.
pub struct Lease {
    storage: Arc<dyn Storage>,
    marker: RootMarker,
    _lock: Box<dyn StorageLock>,
    open_logs: Mutex<HashSet<String>>,
    /// Directories of the root made sure of under this lease, with their shared syncs.
    dirs: Mutex<HashMap<PathBuf, Arc<SharedDirSync>>>,
    /// The root's own sync, which makes those directories' entries durable: once it fails,
    /// every later one under this lease fails too (never retried and carried on from).
    root_sync: SharedDirSync,
    /// Logs whose writing failed in this process, by name, with where in which file: their page
    /// cache may hold bytes no sync will persist after it (a failed `fsync` can mark them
    /// clean), so their next open writes those again and syncs before reading them.
    failed: Mutex<HashMap<String, Unsynced>>,
}

impl Lease {
    /// The storage of the owned root.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }
}

/// The one writer's hold on a log (a session's segments, or the claims log): a second writer
/// of the same log would write the same offsets with the same sequence numbers.
pub struct LogHold {
    lease: Arc<Lease>,
    name: String,
}

impl LogHold {
    /// What the log's writer tells of a failed write or sync.
    pub(crate) fn failures(&self) -> FailureMark {
        FailureMark {
            lease: self.lease.clone(),
            name: self.name.clone(),
        }
    }

    /// Where a failure in this process left the log unsynced (see [`FailureMark`]), if it did:
    /// the opener writes back what follows and syncs it before reading it.
    pub(crate) fn take_failed(&self) -> Option<Unsynced> {
        lock(&self.lease.failed).remove(&self.name)
    }
}

/// Marks a log whose write or sync failed. After a failed `fsync` the kernel may have marked
/// the unsynced pages clean: they stay readable but no later sync writes them, so reading them
/// back as durable (reopening in this process) would build on bytes a power loss takes away.
#[derive(Clone)]
pub(crate) struct FailureMark {
    lease: Arc<Lease>,
    name: String,
}

/// Where a log stopped being known durable: every byte of `file` from `offset` on, and every
/// later file of the log, may sit in the page cache unsynced. A log's directory as `file`
/// means all of its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsynced {
    pub file: PathBuf,
    pub offset: u64,
}

impl FailureMark {
    /// Records that a write or sync of the log failed with `file` known durable up to `offset`;
    /// the earliest point marked is kept.
    pub fn failed_in(&self, file: &Path, offset: u64) {
        let point = Unsynced {
            file: file.to_owned(),
            offset,
        };
        let mut failed = lock(&self.lease.failed);
        let kept = failed
            .entry(self.name.clone())
            .or_insert_with(|| point.clone());
        if (point.file.as_path(), point.offset) < (kept.file.as_path(), kept.offset) {
            *kept = point;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for LogHold {
    fn drop(&mut self) {
        let mut open = self
            .lease
            .open_logs
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        open.remove(&self.name);
    }
}

impl Owner {
    /// Takes the lease of the root `storage` is rooted at, whose marker must already be valid.
    /// `None` while another process or handle holds it.
    pub fn try_acquire(storage: Arc<dyn Storage>) -> Result<Option<Owner>> {
        // Refuse a path that is not a root before anything (the lock file) is written there.
        read_marker(&*storage)?;
        Owner::acquire_then(storage, read_marker)
    }

    /// Takes the lease of a root, creating its directory and marker if absent. The marker is
    /// written under the lock, so two first openers cannot both write one.
    pub fn try_acquire_creating(storage: Arc<dyn Storage>) -> Result<Option<Owner>> {
        let root = storage.describe_root();
        match storage
            .entry_kind(Path::new(""))
            .map_err(|e| Error::io(&root, "stat", e))?
        {
            Some(EntryKind::Dir) => {}
            Some(_) => {
                return Err(Error::NotARoot {
                    path: root,
                    why: "it is not a directory".into(),
                })
            }
            None => match storage.create_dir(Path::new("")) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(&root, "create directory", e)),
            },
        }
        if storage
            .entry_kind(Path::new(MARKER_FILE))
            .map_err(|e| Error::io(MARKER_FILE, "stat", e))?
            .is_some()
        {
            // An existing marker is checked before anything is written.
            read_marker(&*storage)?;
        }
        Owner::acquire_then(storage, create_or_open_root)
    }

    /// Takes the lock, then reads (or makes) the marker while holding it.
    fn acquire_then(
        storage: Arc<dyn Storage>,
        marker: impl FnOnce(&dyn Storage) -> Result<RootMarker>,
    ) -> Result<Option<Owner>> {
        let Some(lock) = storage
            .try_lock(Path::new(LOCK_FILE))
            .map_err(|e| Error::io(LOCK_FILE, "lock", e))?
        else {
            return Ok(None);
        };
        // A process that owned the root and died may have left writes in the page cache that
        // reads would see although no sync persisted them: made durable before anything is
        // read, so nothing this owner reads (or acknowledges on top of) can vanish in a power
        // loss. PostgreSQL's crash recovery starts with the same `syncfs`.
        storage
            .sync_all()
            .map_err(|e| Error::io(storage.describe_root(), "syncfs", e))?;
        let marker = marker(&*storage)?;
        Ok(Some(Owner {
            lease: Arc::new(Lease {
                storage,
                marker,
                _lock: lock,
                open_logs: Mutex::new(HashSet::new()),
                dirs: Mutex::new(HashMap::new()),
                root_sync: SharedDirSync::new(Path::new("")),
                failed: Mutex::new(HashMap::new()),
            }),
        }))
    }

    /// The storage of the owned root.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.lease.storage
    }

    /// The root's marker.
    pub fn marker(&self) -> &RootMarker {
        &self.lease.marker
    }

    /// True when a write or sync of log `name` failed in this process and no writer has
    /// written its bytes back since: its files may show bytes no sync persisted.
    pub(crate) fn log_failed(&self, name: &str) -> bool {
        lock(&self.lease.failed).contains_key(name)
    }

    /// Takes the hold on log `name` for its one writer; [`Error::AlreadyOpen`] while another
    /// writer holds it.
    pub fn hold_log(&self, name: &str) -> Result<LogHold> {
        let mut open = self
            .lease
            .open_logs
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if !open.insert(name.to_owned()) {
            return Err(Error::AlreadyOpen {
                what: name.to_owned(),
            });
        }
        Ok(LogHold {
            lease: self.lease.clone(),
            name: name.to_owned(),
        })
    }

    /// Makes sure `dir`, a directory directly under the root, exists and that its entry is
    /// durable, once per lease: the root is synced even when `dir` already exists, since a
    /// process that died may have made it without syncing the root.
    pub fn ensure_root_dir(&self, dir: &Path) -> Result<()> {
        self.dir_sync(dir).map(|_| ())
    }

    /// Makes the entries created in `dir` (made sure of by [`Owner::ensure_root_dir`]) durable,
    /// sharing the `fsync` with concurrent callers.
    pub fn sync_root_dir_shared(&self, dir: &Path) -> Result<()> {
        self.dir_sync(dir)?.sync(&**self.storage())
    }

    fn dir_sync(&self, dir: &Path) -> Result<Arc<SharedDirSync>> {
        let mut dirs = self.lease.dirs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = dirs.get(dir) {
            return Ok(d.clone());
        }
        let storage = self.storage();
        match storage
            .entry_kind(dir)
            .map_err(|e| Error::io(dir, "stat", e))?
        {
            Some(EntryKind::Dir) => {}
            Some(_) => return Err(Error::corrupt(dir, 0, "expected a directory")),
            None => storage
                .create_dir(dir)
                .map_err(|e| Error::io(dir, "create directory", e))?,
        }
        self.lease.root_sync.sync(&**storage)?;
        let d = Arc::new(SharedDirSync::new(dir));
        dirs.insert(dir.to_owned(), d.clone());
        Ok(d)
    }

    /// Gives up this handle; the lock goes once every writer opened through it is dropped.
    pub fn close(self) {}
}

/// Resolves the root at `path` (creating it and its marker if absent) and takes its lease.
/// `None` while another process or handle owns it.
pub fn try_acquire_owner(path: &Path) -> Result<Option<Owner>> {
    Owner::try_acquire_creating(Arc::new(RealStorage::new(path)))
}
