//! Read-only files held in one shared buffer: the entries of an export bundle, checked as a
//! root without being extracted. Each file is a byte range of the buffer; nothing is copied.

use super::{DirEntry, EntryKind, FileBytes, OpenMode, Storage, StorageFile, StorageLock};
use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// A tree of read-only files over ranges of `data`, named like a root's files.
pub struct MemStorage {
    data: Arc<Vec<u8>>,
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
        let mut out = MemStorage {
            data,
            files: BTreeMap::new(),
            dirs: BTreeMap::from([(PathBuf::new(), Vec::new())]),
            name: name.into(),
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
            if range.start > range.end || range.end > out.data.len() {
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
}

struct MemFile {
    data: Arc<Vec<u8>>,
    range: Range<usize>,
}

impl StorageFile for MemFile {
    fn size(&self) -> io::Result<u64> {
        Ok(self.range.len() as u64)
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let bytes = &self.data[self.range.clone()];
        let Some(rest) = usize::try_from(offset).ok().and_then(|o| bytes.get(o..)) else {
            return Ok(0);
        };
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        Ok(n)
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
        Ok(Box::new(MemFile {
            data: Arc::clone(&self.data),
            range: self.range(path)?,
        }))
    }
    fn map_file(&self, path: &Path) -> io::Result<FileBytes> {
        Ok(FileBytes::Shared(Arc::clone(&self.data), self.range(path)?))
    }
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        Ok(self.data[self.range(path)?].to_vec())
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
mod tests {
    use super::*;

    fn tree(paths: &[&str]) -> Result<MemStorage, String> {
        let files = paths
            .iter()
            .map(|p| (PathBuf::from(p), 0..0))
            .collect::<Vec<_>>();
        MemStorage::new("bundle", Arc::new(Vec::new()), files)
    }

    fn names(s: &MemStorage, dir: &str) -> Vec<(String, bool)> {
        s.list_dir(Path::new(dir))
            .expect("a directory")
            .into_iter()
            .map(|e| (e.name, e.kind == EntryKind::Dir))
            .collect()
    }

    #[test]
    fn each_directory_lists_each_child_once_in_name_order() {
        let s = tree(&["a/b/c", "f", "a/e", "a/b/d", "a/x/y/z"]).expect("a tree");
        let (dir, file) = (true, false);
        assert_eq!(names(&s, ""), [("a".into(), dir), ("f".into(), file)]);
        assert_eq!(
            names(&s, "a"),
            [("b".into(), dir), ("e".into(), file), ("x".into(), dir)]
        );
        assert_eq!(names(&s, "a/b"), [("c".into(), file), ("d".into(), file)]);
        assert_eq!(names(&s, "a/x/y"), [("z".into(), file)]);
        assert!(tree(&["a/b", "a/b"]).is_err_and(|e| e.contains("named twice")));
        assert!(tree(&["a/b", "a/b/c"]).is_err_and(|e| e.contains("both a file and a directory")));
        assert!(tree(&["a/b/c", "a/b"]).is_err_and(|e| e.contains("named twice")));
    }

    /// Names that are not UTF-8 (two such differed only in bytes the listing's names lose, and
    /// a debug build panicked on finding one name twice) are refused, as no root has them.
    #[test]
    fn a_name_that_is_not_utf8_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        let path = |b: &[u8]| PathBuf::from(std::ffi::OsStr::from_bytes(b));
        let files = vec![(path(b"d/a\xff"), 0..0), (path(b"d/a\xfe"), 0..0)];
        let refused = MemStorage::new("bundle", Arc::new(Vec::new()), files);
        assert!(refused.is_err_and(|e| e.contains("not UTF-8")));
        let files = vec![(path(b"\xff/a"), 0..0)];
        let refused = MemStorage::new("bundle", Arc::new(Vec::new()), files);
        assert!(refused.is_err_and(|e| e.contains("not UTF-8")));
    }
}
