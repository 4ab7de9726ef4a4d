//! Read-only files that are byte ranges of one shared buffer or of one file: the entries of an
//! export bundle, checked as a root without being extracted (the bundle read in place, never
//! held whole), or the logs `export` just bundled. Nothing is copied but what a read asks for.

use super::{DirEntry, EntryKind, FileBytes, OpenMode, Storage, StorageFile, StorageLock};
use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// What a [`MemStorage`]'s files are ranges of.
#[derive(Clone)]
enum Backing {
    /// A buffer in memory.
    Bytes(Arc<Vec<u8>>),
    /// A file, read where a read asks.
    File(Arc<dyn StorageFile>),
}

/// A tree of read-only files over ranges of one buffer or file, named like a root's files.
pub struct MemStorage {
    backing: Backing,
    files: BTreeMap<PathBuf, Range<usize>>,
    /// Every directory (the root is the empty path) with its entries, sorted by name.
    dirs: BTreeMap<PathBuf, Vec<DirEntry>>,
    name: PathBuf,
}

fn refused() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "files held in memory are read-only",
    )
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

impl MemStorage {
    /// The files `files` names (relative paths of normal components only, each once, none
    /// also a directory) over `data`; the reason when they cannot be a tree. `name` is what
    /// messages call the root.
    pub fn new(
        name: impl Into<PathBuf>,
        data: Arc<Vec<u8>>,
        files: Vec<(PathBuf, Range<usize>)>,
    ) -> Result<MemStorage, String> {
        let len = data.len();
        MemStorage::tree(name.into(), Backing::Bytes(data), len, files)
    }

    /// The files `files` names over ranges of `file`, `len` bytes long, as [`MemStorage::new`]
    /// takes them over a buffer; each read reads the file there.
    pub fn over_file(
        name: impl Into<PathBuf>,
        file: Arc<dyn StorageFile>,
        len: u64,
        files: Vec<(PathBuf, Range<usize>)>,
    ) -> Result<MemStorage, String> {
        let len = usize::try_from(len).map_err(|_| format!("{len} bytes: too long"))?;
        MemStorage::tree(name.into(), Backing::File(file), len, files)
    }

    fn tree(
        name: PathBuf,
        backing: Backing,
        len: usize,
        files: Vec<(PathBuf, Range<usize>)>,
    ) -> Result<MemStorage, String> {
        let mut out = MemStorage {
            backing,
            files: BTreeMap::new(),
            dirs: BTreeMap::from([(PathBuf::new(), Vec::new())]),
            name,
        };
        for (path, range) in files {
            if path.as_os_str().is_empty()
                || !path.components().all(|c| matches!(c, Component::Normal(_)))
            {
                return Err(format!(
                    "{}: not a relative path of plain names",
                    path.display()
                ));
            }
            // A listing names entries as text: a name that is not UTF-8 (no root has one)
            // would be listed as another name, or two names as one.
            if path.to_str().is_none() {
                return Err(format!("{}: a name that is not UTF-8", path.display()));
            }
            if range.start > range.end || range.end > len {
                return Err(format!(
                    "{}: its bytes lie outside the buffer",
                    path.display()
                ));
            }
            if out.files.contains_key(&path) || out.dirs.contains_key(&path) {
                return Err(format!("{}: named twice", path.display()));
            }
            // Every ancestor is a directory, and none of them a file. A directory already in
            // `dirs` is already listed in its parent (and so are its ancestors), which is known
            // without searching its siblings: a bundle of a million entries in one directory
            // took a search of each one's siblings.
            let mut child = path.clone();
            let mut kind = EntryKind::File;
            let mut known = false;
            while let Some(parent) = child.parent().map(Path::to_path_buf) {
                if out.files.contains_key(&parent) {
                    return Err(format!("{}: both a file and a directory", parent.display()));
                }
                let name = child
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_owned();
                let parent_known = out.dirs.contains_key(&parent);
                let entries = out.dirs.entry(parent.clone()).or_default();
                debug_assert_eq!(known, entries.iter().any(|e| e.name == name));
                if !known {
                    entries.push(DirEntry { name, kind });
                }
                if known || parent.as_os_str().is_empty() {
                    break;
                }
                known = parent_known;
                kind = EntryKind::Dir;
                child = parent;
            }
            out.files.insert(path, range);
        }
        for entries in out.dirs.values_mut() {
            entries.sort_by(|a, b| a.name.cmp(&b.name));
        }
        Ok(out)
    }

    fn range(&self, path: &Path) -> io::Result<Range<usize>> {
        self.files.get(path).cloned().ok_or_else(|| not_found(path))
    }

    fn file(&self, path: &Path) -> io::Result<MemFile> {
        Ok(MemFile {
            backing: self.backing.clone(),
            range: self.range(path)?,
        })
    }
}

struct MemFile {
    backing: Backing,
    range: Range<usize>,
}

impl MemFile {
    /// The whole file, copied out of the buffer or read from the file.
    fn bytes(&self) -> io::Result<Vec<u8>> {
        match &self.backing {
            Backing::Bytes(data) => Ok(data[self.range.clone()].to_vec()),
            Backing::File(file) => {
                super::data_end::check_holes(self, 0, self.range.len() as u64)?;
                let mut buf = Vec::new();
                super::buffer::grow(&mut buf, self.range.len() as u64)?;
                let n = file.read_full_at(&mut buf, self.range.start as u64)?;
                buf.truncate(n);
                Ok(buf)
            }
        }
    }
}

impl StorageFile for MemFile {
    fn size(&self) -> io::Result<u64> {
        Ok(self.range.len() as u64)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let Some(at) = usize::try_from(offset)
            .ok()
            .filter(|&o| o < self.range.len())
        else {
            return Ok(0);
        };
        let n = (self.range.len() - at).min(buf.len());
        match &self.backing {
            Backing::Bytes(data) => {
                let start = self.range.start + at;
                buf[..n].copy_from_slice(&data[start..start + n]);
                Ok(n)
            }
            Backing::File(file) => file.read_at(&mut buf[..n], (self.range.start + at) as u64),
        }
    }
    /// Over a file, its storage's hole map within the range; a buffer has no holes.
    fn data_after(&self, offset: u64) -> io::Result<Option<(u64, u64)>> {
        let (start, len) = (self.range.start as u64, self.range.len() as u64);
        if offset >= len {
            return Ok(None);
        }
        let Backing::File(file) = &self.backing else {
            return Ok(Some((offset, len)));
        };
        Ok(file
            .data_after(start + offset)?
            // Only a stretch that reaches into what is asked: one a storage misreports before
            // it would wrap the shift below.
            .filter(|&(from, to)| from < start + len && to > start + offset)
            .map(|(from, to)| {
                (
                    from.max(start + offset) - start,
                    to.min(start + len) - start,
                )
            }))
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

impl Storage for MemStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn StorageFile>> {
        if mode != OpenMode::Read {
            return Err(refused());
        }
        Ok(Box::new(self.file(path)?))
    }
    fn map_file(&self, path: &Path) -> io::Result<FileBytes> {
        match &self.backing {
            Backing::Bytes(data) => Ok(FileBytes::Shared(Arc::clone(data), self.range(path)?)),
            Backing::File(_) => Ok(FileBytes::Owned(self.file(path)?.bytes()?)),
        }
    }
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.file(path)?.bytes()
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
        self.dirs.get(path).cloned().ok_or_else(|| not_found(path))
    }
    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        Ok(if self.files.contains_key(path) {
            Some(EntryKind::File)
        } else if self.dirs.contains_key(path) {
            Some(EntryKind::Dir)
        } else {
            None
        })
    }
    fn try_lock(&self, _: &Path) -> io::Result<Option<Box<dyn StorageLock>>> {
        Err(refused())
    }
    fn is_locked(&self, _: &Path) -> io::Result<bool> {
        Ok(false)
    }
    fn describe_root(&self) -> PathBuf {
        self.name.clone()
    }
}

#[cfg(test)]
#[path = "mem_tests.rs"]
mod tests;
