//! Root resolution and the single-owner lease (against a second real process: lease_process.rs).

mod support;

use makalog::root::{create_or_open_root, read_marker, try_acquire_owner, Owner, MARKER_FILE};
use makalog::segment::{SegmentWriter, WriterConfig};
use makalog::storage::RealStorage;
use makalog::Error;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

#[test]
fn a_new_root_is_a_0700_directory_with_a_marker_and_reopening_keeps_its_id() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let storage = RealStorage::new(&root);
    let marker = create_or_open_root(&storage).expect("create");
    let mode = std::fs::metadata(&root).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    assert_eq!(marker.kind, "interactive");
    assert_eq!(marker.root_id.len(), 64);
    assert!(marker
        .root_id
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(create_or_open_root(&storage).expect("reopen"), marker);
    assert_eq!(read_marker(&storage).expect("read"), marker);
    let other = create_or_open_root(&RealStorage::new(t.path().join("other"))).expect("other");
    assert_ne!(
        other.root_id, marker.root_id,
        "every root gets its own random id"
    );
}

fn assert_refused_untouched(root: &Path) {
    let before = support::snapshot(root);
    match create_or_open_root(&RealStorage::new(root)) {
        Err(Error::NotARoot { .. }) => {}
        other => panic!("expected NotARoot, got {other:?}"),
    }
    assert_eq!(before, support::snapshot(root));
}

#[test]
fn a_marker_of_another_kind_or_a_malformed_one_is_refused_with_nothing_written() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    create_or_open_root(&RealStorage::new(&root)).expect("create");
    let marker = root.join(MARKER_FILE);
    let good = std::fs::read_to_string(&marker).expect("read");
    std::fs::write(&marker, good.replace("interactive", "headless")).expect("write");
    assert_refused_untouched(&root);
    std::fs::write(&marker, "{not json").expect("write");
    assert_refused_untouched(&root);
    std::fs::write(&marker, good.replace("}", ",\"extra\":1}")).expect("write");
    assert_refused_untouched(&root);
    std::fs::write(&marker, "x".repeat(2000)).expect("write");
    assert_refused_untouched(&root);
    // The same values as an array: FORMAT.md's marker is a JSON object (serde's struct
    // reader also takes a sequence of the fields in order).
    let v: serde_json::Value = serde_json::from_str(&good).expect("json");
    let array = serde_json::json!([
        v["schemaVersion"],
        v["kind"],
        v["rootId"],
        v["formatVersion"]
    ]);
    std::fs::write(&marker, array.to_string()).expect("write");
    assert_refused_untouched(&root);
}

#[test]
fn a_path_that_is_a_file_is_refused() {
    let t = tempfile::tempdir().expect("tmp");
    let file = t.path().join("file");
    std::fs::write(&file, b"not a root").expect("write");
    assert!(matches!(
        create_or_open_root(&RealStorage::new(&file)),
        Err(Error::NotARoot { .. })
    ));
    assert_eq!(std::fs::read(&file).expect("read"), b"not a root");
}

#[test]
fn a_second_handle_gets_nothing_while_the_lease_is_held() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let owner = try_acquire_owner(&root).expect("acquire").expect("free");
    assert!(try_acquire_owner(&root).expect("try").is_none());
    let mode = std::fs::metadata(root.join("owner.lock"))
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    owner.close();
    assert!(try_acquire_owner(&root).expect("try").is_some());
}

#[test]
fn writers_keep_the_lease_until_they_are_gone() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let owner = try_acquire_owner(&root).expect("acquire").expect("free");
    let (writer, _) = SegmentWriter::open(&owner, "s", WriterConfig::default()).expect("writer");
    owner.close();
    assert!(
        try_acquire_owner(&root).expect("try").is_none(),
        "an open writer keeps the lease"
    );
    drop(writer);
    assert!(try_acquire_owner(&root).expect("try").is_some());
}

#[test]
fn reading_needs_no_lease() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let _owner = try_acquire_owner(&root).expect("acquire").expect("free");
    assert!(makalog::verify::verify_root(&RealStorage::new(&root))
        .expect("verify")
        .is_clean());
}

#[test]
fn a_log_has_one_writer_per_owner() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    let owner = try_acquire_owner(&root).expect("acquire").expect("free");
    let (w, _) = SegmentWriter::open(&owner, "s", WriterConfig::default()).expect("writer");
    assert!(matches!(
        SegmentWriter::open(&owner, "s", WriterConfig::default()),
        Err(Error::AlreadyOpen { .. })
    ));
    SegmentWriter::open(&owner, "other", WriterConfig::default()).expect("another session");
    let store = makalog::store::RuntimeEventStore::open(&owner, WriterConfig::default());
    assert!(matches!(
        store.open_session_now("s"),
        Err(Error::AlreadyOpen { .. })
    ));
    assert_eq!(
        store
            .list_session_invocations("s")
            .expect("a read takes no write hold"),
        Vec::new()
    );
    drop(w);
    store
        .open_session_now("s")
        .expect("free once the writer is gone");
    assert!(
        matches!(
            SegmentWriter::open(&owner, "s", WriterConfig::default()),
            Err(Error::AlreadyOpen { .. })
        ),
        "now the store holds it"
    );
    let (claims, _) = makalog::claims::ClaimsLog::open(&owner).expect("claims");
    assert!(matches!(
        makalog::claims::ClaimsLog::open(&owner),
        Err(Error::AlreadyOpen { .. })
    ));
    drop(claims);
    makalog::claims::ClaimsLog::open(&owner).expect("claims again");
}

#[test]
fn taking_the_lease_of_something_that_is_not_a_root_writes_nothing() {
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("root");
    create_or_open_root(&RealStorage::new(&root)).expect("create");
    std::fs::write(root.join(MARKER_FILE), "{not json").expect("damage");
    let before = support::snapshot(&root);
    assert!(matches!(
        try_acquire_owner(&root),
        Err(Error::NotARoot { .. })
    ));
    assert!(matches!(
        Owner::try_acquire(Arc::new(RealStorage::new(&root))),
        Err(Error::NotARoot { .. })
    ));
    assert_eq!(
        before,
        support::snapshot(&root),
        "no lock file, no marker written"
    );
}

#[test]
fn unmapped_storage_reads_what_mapped_storage_maps() {
    use makalog::storage::{FileBytes, Storage};
    let t = tempfile::tempdir().expect("tmp");
    std::fs::write(t.path().join("f"), b"sealed bytes").expect("write");
    let mapped = RealStorage::new(t.path())
        .map_file(Path::new("f"))
        .expect("map");
    assert!(
        matches!(mapped, FileBytes::Mapped(_)),
        "the owner maps immutable files"
    );
    let read = RealStorage::unmapped(t.path())
        .map_file(Path::new("f"))
        .expect("read");
    assert!(
        matches!(read, FileBytes::Owned(_)),
        "a reader of a root it does not own never maps (a truncation would be SIGBUS)"
    );
    assert_eq!(&*read, &*mapped);
}

/// A new owner makes durable what a process that died left in the page cache before it reads
/// anything: a power loss after the lease is taken loses none of what it could have read.
#[test]
fn taking_the_lease_makes_what_a_dead_owner_left_unsynced_durable() {
    use makalog::storage::{OpenMode, SimRng, SimStorage, Storage, Tear};
    let storage = Arc::new(SimStorage::new());
    create_or_open_root(&*storage).expect("root");
    {
        let owner = Owner::try_acquire(storage.clone())
            .expect("lease")
            .expect("free");
        storage.create_dir(Path::new("left")).expect("mkdir");
        let f = storage
            .open(Path::new("left/behind"), OpenMode::CreateNew)
            .expect("create");
        f.write_all_at(b"unsynced", 0).expect("write");
        drop(owner);
    }
    // The process dies; the machine stays up, so reads still see the bytes.
    storage.restart();
    let owner = Owner::try_acquire(storage.clone())
        .expect("lease")
        .expect("free");
    storage.crash(Tear::None, &mut SimRng::new(1));
    drop(owner);
    assert_eq!(
        storage
            .read_file(Path::new("left/behind"))
            .expect("survived"),
        b"unsynced"
    );
}
