//! A read-only view of a root with some files cut short and others hidden: a log as it stood
//! at an earlier point (replay to a point in time), or its valid prefix (salvage, a live
//! root's export, where the directories are also closed: what the owner creates after the view
//! was made is not in it). Nothing is copied; reads past a cut end there, and every write is
//! refused.

use super::{DirEntry, EntryKind, FileBytes, OpenMode, Storage, StorageFile, StorageLock};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

/// What the view does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The file ends at this length (if it is longer).
    At(u64),
    /// The file is not there.
    Hidden,
}

/// A view of `inner` with [`Cut`]s applied, read-only.
pub struct CutView<'a> {
    inner: &'a dyn Storage,
    cuts: BTreeMap<PathBuf, Cut>,
    /// Directories whose entries are fixed: only these names are in the view.
    closed: BTreeMap<PathBuf, BTreeSet<String>>,
}

fn refused() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "a cut view is read-only")
}

impl<'a> CutView<'a> {
    pub fn new(inner: &'a dyn Storage) -> Self {
        CutView {
            inner,
            cuts: BTreeMap::new(),
            closed: BTreeMap::new(),
        }
    }

    /// Fixes what `dir` holds in the view to `names`: an entry made there later, and all
    /// under it, is not in the view.
    pub fn close_dir(&mut self, dir: impl Into<PathBuf>, names: impl IntoIterator<Item = String>) {
        self.closed.insert(dir.into(), names.into_iter().collect());
    }

    /// False when `path` or a directory it lies under was made after its directory was closed.
    fn shown(&self, path: &Path) -> bool {
        path.ancestors().all(|a| match (a.parent(), a.file_name()) {
            (Some(dir), Some(name)) => self
                .closed
                .get(dir)
                .is_none_or(|names| name.to_str().is_some_and(|n| names.contains(n))),
            _ => true,
        })
    }

    /// Cuts or hides `path` (relative to the root); a later cut of the same path replaces it.
    pub fn cut(&mut self, path: impl Into<PathBuf>, cut: Cut) {
        self.cuts.insert(path.into(), cut);
    }

    /// The cuts, by path.
    pub fn cuts(&self) -> &BTreeMap<PathBuf, Cut> {
        &self.cuts
    }

    fn limit(&self, path: &Path) -> io::Result<Option<u64>> {
        if !self.shown(path) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: made after this view", path.display()),
            ));
        }
        match self.cuts.get(path) {
            Some(Cut::Hidden) => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: not in this view", path.display()),
            )),
            Some(Cut::At(n)) => Ok(Some(*n)),
            None => Ok(None),
        }
    }
}

struct CutFile {
    inner: Box<dyn StorageFile>,
    limit: u64,
}

impl StorageFile for CutFile {
    fn size(&self) -> io::Result<u64> {
        Ok(self.inner.size()?.min(self.limit))
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let room = self.limit.saturating_sub(offset);
        let n = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if n == 0 {
            return Ok(0);
        }
        self.inner.read_at(&mut buf[..n], offset)
    }
    fn data_after(&self, offset: u64) -> io::Result<Option<(u64, u64)>> {
        Ok(self
            .inner
            .data_after(offset)?
            .filter(|&(start, _)| start < self.limit)
            .map(|(start, end)| (start, end.min(self.limit))))
    }
    fn write_all_at(&self, _: &[u8], _: u64) -> io::Result<()> {
        Err(refused())
    }
    fn sync_data(&self) -> io::Result<()> {
        Err(refused())
    }
    fn set_len(&self, _: u64) -> io::Result<()> {
        Err(refused())
    }
}

fn truncated(bytes: FileBytes, limit: Option<u64>) -> FileBytes {
    match limit {
        Some(n) if (n as usize) < bytes.len() => FileBytes::Owned(bytes[..n as usize].to_vec()),
        _ => bytes,
    }
}

impl Storage for CutView<'_> {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn StorageFile>> {
        if mode != OpenMode::Read {
            return Err(refused());
        }
        let limit = self.limit(path)?;
        let inner = self.inner.open(path, mode)?;
        Ok(match limit {
            Some(limit) => Box::new(CutFile { inner, limit }),
            None => inner,
        })
    }
    fn map_file(&self, path: &Path) -> io::Result<FileBytes> {
        let limit = self.limit(path)?;
        Ok(truncated(self.inner.map_file(path)?, limit))
    }
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let limit = self.limit(path)?;
        let mut bytes = self.inner.read_file(path)?;
        if let Some(n) = limit {
            bytes.truncate(usize::try_from(n).unwrap_or(usize::MAX));
        }
        Ok(bytes)
    }
    fn create_dir(&self, _: &Path) -> io::Result<()> {
        Err(refused())
    }
    fn rename(&self, _: &Path, _: &Path) -> io::Result<()> {
        Err(refused())
    }
    fn remove_file(&self, _: &Path) -> io::Result<()> {
        Err(refused())
    }
    fn sync_dir(&self, _: &Path) -> io::Result<()> {
        Err(refused())
    }
    fn sync_all(&self) -> io::Result<()> {
        Err(refused())
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let mut entries = self.inner.list_dir(path)?;
        entries.retain(|e| {
            let p = path.join(&e.name);
            self.cuts.get(&p) != Some(&Cut::Hidden) && self.shown(&p)
        });
        Ok(entries)
    }
    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        match self.cuts.get(path) {
            Some(Cut::Hidden) => Ok(None),
            _ if !self.shown(path) => Ok(None),
            _ => self.inner.entry_kind(path),
        }
    }
    fn try_lock(&self, _: &Path) -> io::Result<Option<Box<dyn StorageLock>>> {
        Err(refused())
    }
    fn is_locked(&self, path: &Path) -> io::Result<bool> {
        self.inner.is_locked(path)
    }
    fn describe_root(&self) -> PathBuf {
        self.inner.describe_root()
    }
}
