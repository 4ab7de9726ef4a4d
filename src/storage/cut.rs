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

/// The bytes of a file cut at `limit`: those before it only, none after it read or held.
fn read_prefix(file: &CutFile) -> io::Result<Vec<u8>> {
    let len = file.inner.size()?.min(file.limit);
    super::data_end::check_holes(file, 0, len)?;
    let mut bytes = Vec::new();
    super::buffer::grow(&mut bytes, len)?;
    let n = file.read_full_at(&mut bytes, 0)?;
    bytes.truncate(n);
    Ok(bytes)
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
        match self.limit(path)? {
            Some(_) => self.read_file(path).map(FileBytes::Owned),
            None => self.inner.map_file(path),
        }
    }
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        match self.limit(path)? {
            Some(limit) => read_prefix(&CutFile {
                inner: self.inner.open(path, OpenMode::Read)?,
                limit,
            }),
            None => self.inner.read_file(path),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::RealStorage;
    use std::os::unix::fs::FileExt as _;

    /// A file cut at a length is read to it only: 1 GiB of holes after the cut (which a read
    /// of the whole file refuses) is neither read nor held, mapped or not.
    #[test]
    fn a_cut_file_is_read_to_its_cut_only() {
        let t = tempfile::tempdir().expect("tmp");
        let file = std::fs::File::create(t.path().join("f")).expect("create");
        file.write_all_at(b"0123456789", 0).expect("data");
        file.write_all_at(b"z", 1 << 30).expect("after a hole");
        for inner in [RealStorage::new(t.path()), RealStorage::unmapped(t.path())] {
            let e = inner.read_file(Path::new("f")).expect_err("whole");
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
            let mut view = CutView::new(&inner);
            view.cut("f", Cut::At(4));
            assert_eq!(view.read_file(Path::new("f")).expect("read"), b"0123");
            assert_eq!(&*view.map_file(Path::new("f")).expect("map"), b"0123");
            // Zeros before the cut are the file's, read as they are.
            view.cut("f", Cut::At(12));
            assert_eq!(
                view.read_file(Path::new("f")).expect("read"),
                b"0123456789\0\0"
            );
        }
    }
}
