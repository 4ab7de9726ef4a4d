//! Unit tests of the real storage's directory checks and whole-file reads.
use super::*;

/// Directories checked on the way to a path are remembered, but no more than `DIRS_KEPT`:
/// a host touching ever more sessions does not keep one entry for each forever.
#[test]
fn the_directories_remembered_stay_bounded() {
    let t = tempfile::tempdir().expect("tmp");
    let storage = RealStorage::new(t.path());
    let n = DIRS_KEPT + 10;
    for i in 0..n {
        std::fs::create_dir_all(t.path().join(format!("sessions/s{i}"))).expect("mkdir");
        let path = PathBuf::from(format!("sessions/s{i}/index"));
        assert_eq!(storage.entry_kind(&path).expect("kind"), None);
    }
    let kept = storage.dirs.lock().expect("dirs").len();
    assert!(kept > 0 && kept <= DIRS_KEPT, "{kept}");
}

/// A directory made through the storage is known to be one: a file opened under it next
/// (a new session's first segment) is not preceded by a check of the directory.
#[test]
fn a_directory_made_is_remembered() {
    let t = tempfile::tempdir().expect("tmp");
    let storage = RealStorage::new(t.path().join("root"));
    storage.create_dir(Path::new("")).expect("root");
    storage.create_dir(Path::new("sessions")).expect("sessions");
    storage.create_dir(Path::new("sessions/s1")).expect("s1");
    let known = storage.dirs.lock().expect("dirs").clone();
    let want: HashSet<Vec<u8>> = ["sessions", "sessions/s1"].map(|d| d.into()).into();
    assert_eq!(known, want);
    assert_eq!(
        storage.entry_kind(Path::new("sessions/s1")).expect("kind"),
        Some(EntryKind::Dir)
    );
}

/// A directory checked on the way to a file is remembered by its path under the root, the
/// key a directory made is remembered by, whether or not the root ends in a separator.
#[test]
fn a_directory_checked_is_remembered_by_its_path_under_the_root() {
    let t = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(t.path().join("sessions/s1")).expect("mkdir");
    let storage = RealStorage::new(t.path());
    assert_eq!(
        storage
            .entry_kind(Path::new("sessions/s1/index"))
            .expect("kind"),
        None
    );
    let known = storage.dirs.lock().expect("dirs").clone();
    let want: HashSet<Vec<u8>> = ["sessions", "sessions/s1"].map(|d| d.into()).into();
    assert_eq!(known, want);

    // Through the real path: a symlink on the way to the temporary directory is refused.
    let real = std::fs::canonicalize(t.path()).expect("canonical");
    let root = RealStorage::new("/");
    let under = real
        .strip_prefix("/")
        .expect("absolute")
        .join("sessions/s1/index");
    assert_eq!(root.entry_kind(&under).expect("kind"), None);
    let known = root.dirs.lock().expect("dirs").clone();
    let s1 = under.parent().expect("s1").as_os_str().as_bytes().to_vec();
    assert!(known.contains(&s1), "{known:?}");
    assert!(known.iter().all(|d| !d.starts_with(b"/")), "{known:?}");
    // A directory made under a root given with a trailing separator is remembered by the key
    // a check of it finds.
    let trailing = RealStorage::new(format!("{}/", real.display()));
    trailing.create_dir(Path::new("made")).expect("mkdir");
    let made = trailing.dirs.lock().expect("dirs").clone();
    assert_eq!(made, HashSet::from([b"made".to_vec()]));
    assert_eq!(
        trailing.entry_kind(Path::new("made/x")).expect("kind"),
        None
    );
    assert_eq!(
        trailing.dirs.lock().expect("dirs").len(),
        1,
        "a hit, not a second key"
    );
}

/// A directory replaced by a symlink since it was checked is refused by a storage that has
/// not checked it (the cache is a process's own, never a second truth on disk).
#[test]
fn a_directory_replaced_by_a_symlink_is_refused_by_a_fresh_check() {
    let t = tempfile::tempdir().expect("tmp");
    let outside = tempfile::tempdir().expect("outside");
    std::fs::create_dir_all(t.path().join("sessions/s1")).expect("mkdir");
    let first = RealStorage::new(t.path());
    assert_eq!(
        first
            .entry_kind(Path::new("sessions/s1/index"))
            .expect("kind"),
        None
    );
    std::fs::remove_dir(t.path().join("sessions/s1")).expect("rmdir");
    std::os::unix::fs::symlink(outside.path(), t.path().join("sessions/s1")).expect("symlink");
    let fresh = RealStorage::new(t.path());
    let refused = fresh.entry_kind(Path::new("sessions/s1/index"));
    assert!(refused.is_err(), "{refused:?}");
}

/// A whole-file read (into memory, or mapped) of a file whose holes pass what a reader holds is
/// refused unread; up to that, and with the storage told not to map, the file reads as it is.
#[test]
fn whole_file_reads_refuse_more_holes_than_are_held() {
    use std::os::unix::fs::FileExt as _;
    let t = tempfile::tempdir().expect("tmp");
    let hole = |name: &str, len: u64| {
        let file = File::create(t.path().join(name)).expect("create");
        file.write_all_at(b"a", 0).expect("first byte");
        file.write_all_at(b"z", len).expect("last byte");
    };
    let held = super::super::data_end::HOLES_HELD;
    hole("small", held - (1 << 20));
    hole("large", held + (1 << 20));
    for map in [true, false] {
        let storage = match map {
            true => RealStorage::new(t.path()),
            false => RealStorage::unmapped(t.path()),
        };
        let small = storage.map_file(Path::new("small")).expect("held");
        assert_eq!((small[0], small[small.len() - 1]), (b'a', b'z'));
        assert_eq!(small.len() as u64, held - (1 << 20) + 1);
        let e = storage.read_file(Path::new("large")).expect_err("read");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        let Err(e) = storage.map_file(Path::new("large")) else {
            panic!("mapped");
        };
        // The first hole starts at the end of the first byte's block, whatever its size.
        assert!(e.to_string().contains("the first starts at byte "), "{e}");
    }
}
