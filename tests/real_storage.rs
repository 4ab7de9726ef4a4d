//! The real storage's exclusive create: it makes a new regular file or fails, whatever sits
//! at the path (so it asks nothing more of the file it made); a replacement by rename takes the
//! place of a temporary file a crash left; a FIFO (as a device would be) where a file is
//! opened or locked is refused without being opened.

use makalog::storage::{
    replace_cache_file, write_atomically, EntryKind, OpenMode, RealStorage, Storage,
};
use std::path::Path;

#[test]
fn an_exclusive_create_makes_a_new_regular_file_or_fails_on_any_entry_there() {
    let t = tempfile::tempdir().expect("tmp");
    let storage = RealStorage::new(t.path());
    std::fs::write(t.path().join("target"), b"kept").expect("target");
    std::os::unix::fs::symlink(t.path().join("target"), t.path().join("link")).expect("link");
    std::os::unix::fs::symlink(t.path().join("nowhere"), t.path().join("dangling"))
        .expect("dangling");
    let fifo =
        std::ffi::CString::new(t.path().join("fifo").as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo");
    std::fs::create_dir(t.path().join("dir")).expect("dir");
    for name in ["target", "link", "dangling", "fifo", "dir"] {
        // What a replacement by rename relies on to tell a left temporary file.
        let kind = storage
            .open(Path::new(name), OpenMode::CreateNew)
            .err()
            .map(|e| e.kind());
        assert_eq!(kind, Some(std::io::ErrorKind::AlreadyExists), "{name}");
    }
    assert_eq!(
        std::fs::read(t.path().join("target")).expect("read"),
        b"kept"
    );
    assert!(
        !t.path().join("nowhere").exists(),
        "a dangling link is never followed"
    );

    let made = storage
        .open(Path::new("new"), OpenMode::CreateNew)
        .expect("create");
    made.write_all_at(b"x", 0).expect("write");
    assert_eq!(
        storage.entry_kind(Path::new("new")).expect("stat"),
        Some(EntryKind::File)
    );
}

#[test]
fn a_replacement_takes_the_place_of_a_temporary_file_a_crash_left() {
    let t = tempfile::tempdir().expect("tmp");
    let storage = RealStorage::new(t.path());
    for (name, durable) in [("cache", false), ("kept", true)] {
        std::fs::write(t.path().join(name), b"old").expect("old");
        std::fs::write(t.path().join(format!("{name}.tmp")), b"left by a crash").expect("left");
        let path = Path::new(name);
        if durable {
            write_atomically(&storage, path, b"new").expect("write");
        } else {
            replace_cache_file(&storage, path, b"new").expect("replace");
        }
        assert_eq!(std::fs::read(t.path().join(name)).expect("read"), b"new");
        assert!(!t.path().join(format!("{name}.tmp")).exists(), "{name}.tmp");
        // And with none left.
        replace_cache_file(&storage, path, b"newer").expect("again");
        assert_eq!(std::fs::read(t.path().join(name)).expect("read"), b"newer");
    }
    // A symlink left there is removed, never written through; a directory is refused with
    // the live file as it was.
    std::fs::write(t.path().join("elsewhere"), b"untouched").expect("elsewhere");
    std::os::unix::fs::symlink(t.path().join("elsewhere"), t.path().join("cache.tmp"))
        .expect("link");
    replace_cache_file(&storage, Path::new("cache"), b"linked").expect("replace");
    assert_eq!(
        std::fs::read(t.path().join("cache")).expect("read"),
        b"linked"
    );
    assert_eq!(
        std::fs::read(t.path().join("elsewhere")).expect("read"),
        b"untouched"
    );
    std::fs::create_dir(t.path().join("cache.tmp")).expect("dir");
    assert!(replace_cache_file(&storage, Path::new("cache"), b"refused").is_err());
    assert_eq!(
        std::fs::read(t.path().join("cache")).expect("read"),
        b"linked"
    );
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// Opens seen on `path` while `run` runs (inotify's `IN_OPEN`, which the watch itself does
/// not raise).
fn opens_during(path: &Path, run: impl FnOnce()) -> usize {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: plain system calls on a descriptor this function owns and closes, reading into
    // a buffer it owns; each event is read unaligned from within what `read` filled.
    unsafe {
        let fd = libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC);
        assert!(fd >= 0, "inotify_init1");
        assert!(
            libc::inotify_add_watch(fd, c.as_ptr(), libc::IN_OPEN) >= 0,
            "watch"
        );
        run();
        let mut buf = [0u8; 4096];
        let mut opens = 0;
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            while at < n as usize {
                let event = buf
                    .as_ptr()
                    .add(at)
                    .cast::<libc::inotify_event>()
                    .read_unaligned();
                opens += usize::from(event.mask & libc::IN_OPEN != 0);
                at += std::mem::size_of::<libc::inotify_event>() + event.len as usize;
            }
        }
        libc::close(fd);
        opens
    }
}

/// A FIFO where a file is read or locked is refused by name without being opened: it was
/// opened (without blocking) and only then found to be no regular file, which for a device runs
/// its driver's open. A missing file is still not found, and one is still made for a lock.
#[test]
fn a_fifo_where_a_file_is_opened_or_locked_is_refused_without_being_opened() {
    let t = tempfile::tempdir().expect("tmp");
    let storage = RealStorage::new(t.path());
    let fifo = t.path().join("fifo");
    mkfifo(&fifo);
    let opens = opens_during(&fifo, || {
        for mode in [OpenMode::Read, OpenMode::ReadWrite] {
            let kind = storage
                .open(Path::new("fifo"), mode)
                .err()
                .map(|e| e.kind());
            assert_eq!(kind, Some(std::io::ErrorKind::InvalidInput), "{mode:?}");
        }
        let locked = storage.try_lock(Path::new("fifo")).err().map(|e| e.kind());
        assert_eq!(locked, Some(std::io::ErrorKind::InvalidInput));
    });
    assert_eq!(opens, 0, "the FIFO was never opened");
    let missing = storage.open(Path::new("missing"), OpenMode::Read).err();
    assert_eq!(
        missing.map(|e| e.kind()),
        Some(std::io::ErrorKind::NotFound)
    );
    assert!(storage.try_lock(Path::new("lock")).expect("lock").is_some());
}
