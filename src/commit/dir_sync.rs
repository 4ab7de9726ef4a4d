//! Shared directory syncs: concurrent creators of entries in one directory share its `fsync`.
//!
//! A creator makes its entry, then asks for a sync. A sync covers every request made before it
//! started (their entries were made before it began), so whoever finds one running waits for
//! it and then for the next one, which one of the waiters leads. A failed sync fails every
//! later request: the directory's entries may or may not be durable, and retrying a failed
//! `fsync` and carrying on is what the durability contract forbids.

use crate::error::{Error, Result};
use crate::storage::Storage;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Group commit for one directory's `fsync`.
pub(crate) struct SharedDirSync {
    dir: PathBuf,
    state: Mutex<DirSyncState>,
    done: Condvar,
}

#[derive(Default)]
struct DirSyncState {
    /// Requests made so far.
    requested: u64,
    /// Every request up to this one is durable.
    synced: u64,
    running: bool,
    failed: bool,
}

impl SharedDirSync {
    pub fn new(dir: &Path) -> SharedDirSync {
        SharedDirSync {
            dir: dir.to_owned(),
            state: Mutex::new(DirSyncState::default()),
            done: Condvar::new(),
        }
    }

    /// Returns once a sync of the directory that started after this call has succeeded.
    pub fn sync(&self, storage: &dyn Storage) -> Result<()> {
        let mut st = self.lock();
        st.requested += 1;
        let me = st.requested;
        loop {
            if st.failed {
                return Err(self.failed());
            }
            if st.synced >= me {
                return Ok(());
            }
            if st.running {
                st = self.done.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            st.running = true;
            let covers = st.requested;
            drop(st);
            let result = storage.sync_dir(&self.dir);
            st = self.lock();
            st.running = false;
            self.done.notify_all();
            match result {
                Ok(()) => st.synced = st.synced.max(covers),
                Err(e) => {
                    st.failed = true;
                    return Err(Error::io(&self.dir, "fsync directory", e));
                }
            }
        }
    }

    fn failed(&self) -> Error {
        Error::io(
            &self.dir,
            "fsync directory",
            std::io::Error::other("an earlier fsync of this directory failed"),
        )
    }

    fn lock(&self) -> MutexGuard<'_, DirSyncState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}
