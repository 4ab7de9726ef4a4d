//! Unit tests of the real storage's directory checks.
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
    let want: HashSet<PathBuf> = ["sessions", "sessions/s1"].map(PathBuf::from).into();
    assert_eq!(known, want);
    assert_eq!(
        storage.entry_kind(Path::new("sessions/s1")).expect("kind"),
        Some(EntryKind::Dir)
    );
}
