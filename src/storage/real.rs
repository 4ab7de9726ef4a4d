//! The storage seam over the real file system.

use super::{DirEntry, EntryKind, FileBytes, OpenMode, Storage, StorageFile, StorageLock};
use fs2::FileExt as _;
use open::{refuse_special, refused_symlink, regular};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Directories found to be directories that are remembered at most (see `RealStorage::dirs`).
const DIRS_KEPT: usize = 1024;

/// Real files under one root directory.
#[derive(Debug, Clone)]
pub struct RealStorage {
    root: PathBuf,
    /// Whether [`Storage::map_file`] maps files or reads them.
    map: bool,
    /// Directories under the root already found to be directories, not symlinks: a path
    /// through them is not checked again. Kept as the bytes of their path under the root
    /// (hashing a `Path` walks its components, and every file operation asks).
    dirs: Arc<Mutex<HashSet<Vec<u8>>>>,
}

impl RealStorage {
    /// Storage rooted at `root`, mapping immutable files. Nothing is touched until a method is
    /// called. For the owner of the root: no other process changes its files.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        RealStorage {
            root: root.into(),
            map: true,
            dirs: Arc::default(),
        }
    }

    /// Storage rooted at `root` that never maps a file, reading it instead: for reading a root
    /// another process may be changing (or one crafted to), where a file truncated under a
    /// mapping would kill the reader with SIGBUS, and a read gives short bytes the format's
    /// checks then report.
    pub fn unmapped(root: impl Into<PathBuf>) -> Self {
        RealStorage {
            root: root.into(),
            map: false,
            dirs: Arc::default(),
        }
    }

    /// `path` under the root. Every directory on the way must be one: a symlink there (say
    /// `sessions` itself) would lead out of the root, and the last component's own checks
    /// (`O_NOFOLLOW`, `lstat`) cannot see it. Only plain names are taken.
    fn full(&self, path: &Path) -> io::Result<PathBuf> {
        // Built in one buffer of its final size: every operation on a file takes this path.
        let len = self.root.as_os_str().len() + 1 + path.as_os_str().len();
        let mut full = PathBuf::with_capacity(len);
        full.push(&self.root);
        let mut names = path.components().peekable();
        while let Some(name) = names.next() {
            if !matches!(name, Component::Normal(_)) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a path under the root holds only plain names",
                ));
            }
            full.push(name);
            if names.peek().is_some() {
                self.check_dir(&full, self.under_root(&full))?;
            }
        }
        Ok(full)
    }

    /// The path under the root of `full`, a path [`RealStorage::full`] built, as bytes: the
    /// names it joined onto the root, past the separator it may have added. What checked
    /// directories are remembered by.
    fn under_root<'p>(&self, full: &'p Path) -> &'p [u8] {
        let bytes = full.as_os_str().as_bytes();
        let names = bytes.get(self.root.as_os_str().len()..).unwrap_or_default();
        names.strip_prefix(b"/").unwrap_or(names)
    }

    /// Fails unless `full`, a directory under the root (`dir` its path there), is a directory
    /// itself, not a symlink to one.
    fn check_dir(&self, full: &Path, dir: &[u8]) -> io::Result<()> {
        if self.dirs.lock().is_ok_and(|d| d.contains(dir)) {
            return Ok(());
        }
        if !fs::symlink_metadata(full)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is not a directory (a symlink is never followed)",
                    Path::new(OsStr::from_bytes(dir)).display()
                ),
            ));
        }
        self.remember_dir(dir);
        Ok(())
    }

    /// Remembers `dir` (its path under the root) as a directory checked or made by this
    /// process.
    fn remember_dir(&self, dir: &[u8]) {
        if let Ok(mut d) = self.dirs.lock() {
            // Bounded: a host touching many sessions checks their directories again rather
            // than keeping one entry for each forever.
            if d.len() >= DIRS_KEPT {
                d.clear();
            }
            d.insert(dir.to_vec());
        }
    }
}

struct RealFile(File);

/// The file of a whole-file read, `len` bytes long, unless more of it than a reader holds are
/// holes: touching them (read, or through a mapping) would cost their apparent size.
fn held_whole(file: RealFile, len: u64) -> io::Result<File> {
    super::data_end::check_holes(&file, 0, len)?;
    Ok(file.0)
}

impl StorageFile for RealFile {
    fn size(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        loop {
            match self.0.read_at(buf, offset) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn data_after(&self, offset: u64) -> io::Result<Option<(u64, u64)>> {
        #[cfg(target_os = "linux")]
        return super::holes::data_after(&self.0, offset);
        #[cfg(not(target_os = "linux"))]
        {
            let size = self.size()?;
            Ok((offset < size).then_some((offset, size)))
        }
    }
    fn read_persisted_at(&self, buf: &mut [u8], offset: u64) -> io::Result<Option<usize>> {
        #[cfg(target_os = "linux")]
        return super::direct::read_direct(&self.0, buf, offset);
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (buf, offset);
            Ok(None)
        }
    }
}

/// An open lock file holding an exclusive `flock`; closing the file releases it.
struct RealLock {
    _file: File,
}

impl StorageLock for RealLock {}

impl Storage for RealStorage {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(RealFile(self.open_regular(path, mode)?)))
    }

    fn map_file(&self, path: &Path) -> io::Result<FileBytes> {
        if !self.map {
            return self.read_file(path).map(FileBytes::Owned);
        }
        let file = self.open_regular(path, OpenMode::Read)?;
        let len = file.metadata()?.len();
        if len == 0 {
            return Ok(FileBytes::Owned(Vec::new()));
        }
        let file = held_whole(RealFile(file), len)?;
        // SAFETY: only files no writer changes in place are mapped (the trait's contract): sealed
        // segments, which the write path never touches again, and index sidecars, which are
        // only ever replaced by rename, so a mapping keeps the old file's bytes.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(FileBytes::Mapped(map))
    }

    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        let file = self.open_regular(path, OpenMode::Read)?;
        let size = file.metadata()?.len();
        let mut file = held_whole(RealFile(file), size)?;
        let mut out = Vec::new();
        // The room the file says it needs, asked for (not assumed), then the file read into it.
        super::buffer::reserve(&mut out, size)?;
        io::Read::read_to_end(&mut file, &mut out)?;
        Ok(out)
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        let full = self.full(path)?;
        fs::DirBuilder::new().mode(0o700).create(&full)?;
        if path.as_os_str().is_empty() {
            if let Some(parent) = full.parent().filter(|p| !p.as_os_str().is_empty()) {
                File::open(parent)?.sync_all()?;
            }
        } else {
            // Made just now by `mkdir`, which follows no symlink in its last name: a directory.
            self.remember_dir(self.under_root(&full));
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(self.full(from)?, self.full(to)?)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(self.full(path)?)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(self.full(path)?)?.sync_all()
    }

    fn sync_all(&self) -> io::Result<()> {
        let root = File::open(self.full(Path::new(""))?)?;
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: `root` is an open descriptor for the call's whole duration.
            if unsafe { libc::syncfs(root.as_raw_fd()) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        }
        #[cfg(not(target_os = "linux"))]
        {
            // SAFETY: sync(2) takes no arguments and cannot fail.
            unsafe { libc::sync() };
            root.sync_all()
        }
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        // A symlink to a directory is not listed: nothing outside the root is read.
        if !fs::symlink_metadata(self.full(path)?)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a directory (a symlink is never followed)",
            ));
        }
        let mut out = Vec::new();
        for entry in fs::read_dir(self.full(path)?)? {
            let entry = entry?;
            let ft = entry.file_type()?;
            let kind = if ft.is_file() {
                EntryKind::File
            } else if ft.is_dir() {
                EntryKind::Dir
            } else {
                EntryKind::Other
            };
            let entry = match entry.file_name().into_string() {
                Ok(name) => DirEntry { name, kind },
                // No name makalog writes is one, and the seam names entries by string, so it
                // could not be opened: a stray, told by its name made lossy.
                Err(raw) => DirEntry {
                    name: raw.to_string_lossy().into_owned(),
                    kind: EntryKind::Other,
                },
            };
            out.push(entry);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        let full = match self.full(path) {
            Ok(full) => full,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        match fs::symlink_metadata(full) {
            Ok(m) if m.is_file() => Ok(Some(EntryKind::File)),
            Ok(m) if m.is_dir() => Ok(Some(EntryKind::Dir)),
            Ok(_) => Ok(Some(EntryKind::Other)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn StorageLock>>> {
        let full = self.full(path)?;
        match refuse_special(&full) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => other?,
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(full)
            .map_err(refused_symlink)?;
        regular(&file)?;
        match file.try_lock_exclusive() {
            Ok(()) => Ok(Some(Box::new(RealLock { _file: file }))),
            Err(e) if e.raw_os_error() == fs2::lock_contended_error().raw_os_error() => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn is_locked(&self, path: &Path) -> io::Result<bool> {
        use std::os::unix::fs::MetadataExt;
        let meta = match self.full(path).and_then(fs::symlink_metadata) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        // Linux lists every lock in /proc/locks as `MAJOR:MINOR:INODE` of the file locked, so
        // a lock is seen without taking one (which could make a starting owner find it busy).
        let Ok(locks) = fs::read_to_string("/proc/locks") else {
            return Ok(false);
        };
        let dev = meta.dev();
        let (major, minor) = (
            ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff),
            (dev & 0xff) | ((dev >> 12) & !0xff),
        );
        let want = format!("{major:02x}:{minor:02x}:{}", meta.ino());
        Ok(locks
            .lines()
            .filter(|l| !l.contains("->"))
            .any(|l| l.split_whitespace().nth(5) == Some(want.as_str())))
    }

    fn describe_root(&self) -> PathBuf {
        self.root.clone()
    }
}

#[path = "real_open.rs"]
mod open;
#[cfg(test)]
#[path = "real_tests.rs"]
mod tests;
