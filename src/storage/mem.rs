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
            .filter(|&(from, _)| from < start + len)
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

    /// Files over ranges of a file answer every read as the same files over a buffer: reads at
    /// each offset, short and past the end, and whole.
    #[test]
    fn files_over_a_file_read_as_files_over_a_buffer() {
        let data: Arc<Vec<u8>> = Arc::new((0..=255u8).cycle().take(1000).collect());
        let files = vec![
            (PathBuf::from("a"), 10..400),
            (PathBuf::from("d/b"), 400..1000),
            (PathBuf::from("d/empty"), 7..7),
        ];
        let held = MemStorage::new("bundle", data.clone(), files.clone()).expect("tree");
        let whole: Arc<dyn StorageFile> = Arc::new(MemFile {
            backing: Backing::Bytes(data.clone()),
            range: 0..data.len(),
        });
        let read = MemStorage::over_file("bundle", whole, 1000, files.clone()).expect("tree");
        for (path, range) in &files {
            let (h, r) = (
                held.open(path, OpenMode::Read).expect("h"),
                read.open(path, OpenMode::Read).expect("r"),
            );
            assert_eq!(h.size().expect("h"), r.size().expect("r"));
            for offset in [0u64, 1, 63, 389, 390, 599, 600, 10_000] {
                let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
                let n = h.read_at(&mut a, offset).expect("h");
                assert_eq!(
                    r.read_at(&mut b, offset).expect("r"),
                    n,
                    "{path:?} at {offset}"
                );
                assert_eq!(a[..n], b[..n]);
            }
            assert_eq!(read.read_file(path).expect("r"), data[range.clone()]);
            assert_eq!(&*read.map_file(path).expect("r"), &data[range.clone()]);
        }
        let past = MemStorage::over_file(
            "bundle",
            Arc::new(MemFile {
                backing: Backing::Bytes(data.clone()),
                range: 0..10,
            }),
            10,
            files,
        );
        assert!(past.is_err(), "a range past the file's end");
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

    /// Over a file, a range's holes are the file's, within the range: more than a reader holds
    /// is refused whole, unread, as real storage refuses it, and the hole map is clipped and
    /// shifted to the range.
    #[test]
    fn holes_of_a_file_backed_range_are_the_files() {
        use std::os::unix::fs::FileExt as _;
        let t = tempfile::tempdir().expect("tmp");
        let f = std::fs::File::create(t.path().join("bundle")).expect("create");
        f.write_all_at(b"head", 0).expect("head");
        let end = (1u64 << 30) + 4;
        f.write_all_at(b"tail", end).expect("after a hole");
        let real = super::super::RealStorage::new(t.path());
        let file: Arc<dyn StorageFile> = Arc::from(
            real.open(Path::new("bundle"), OpenMode::Read)
                .expect("open"),
        );
        let files = vec![
            (PathBuf::from("sparse"), 2..end as usize + 2),
            (PathBuf::from("dense"), 0..4),
        ];
        let s = MemStorage::over_file("bundle", file, end + 4, files).expect("tree");
        let e = s
            .read_file(Path::new("sparse"))
            .expect_err("1 GiB of holes");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(s.map_file(Path::new("sparse")).is_err());
        assert_eq!(s.read_file(Path::new("dense")).expect("dense"), b"head");
        let sparse = s.open(Path::new("sparse"), OpenMode::Read).expect("open");
        // The head's block (its size is the file system's), then the tail's.
        let (from, block) = sparse.data_after(0).expect("map").expect("the head");
        assert!(from == 0 && (2..1 << 20).contains(&block), "(0, {block})");
        let (from, to) = sparse.data_after(block).expect("map").expect("the tail");
        // The range is `end` bytes long: its last two are the tail's first two.
        assert!(from <= end - 2 && to == end, "({from}, {to})");
        assert_eq!(sparse.data_after(end).expect("map"), None);
    }
}
