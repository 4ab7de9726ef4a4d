//! Zeros after a log's last frame are no data (FORMAT.md: a reader takes any number of them as
//! the end of data), and a file can claim any length for nothing (a sparse file). Every read
//! takes a segment's or the claims log's bytes up to its last non-zero byte, skipping the
//! file system's holes, and answers as it did before the zeros came: it never reads them whole
//! nor holds them in memory.

mod support;

use makalog::claims::ClaimsLog;
use makalog::index::{invocations_from_log, rebuild};
use makalog::segment::{SessionReader, WriterConfig};
use makalog::store::RuntimeEventStore;
use std::path::Path;
use support::cost::*;

const S: &str = "s";

/// A hole of 1 GiB: reading it whole would read (and hold) 1 GiB.
const HOLE: u64 = 1 << 30;

/// Reads of the whole session stay far below the hole: a file's end read back, and the zeros
/// kept after its last non-zero byte (the longest frame), a few times over.
const READ_BOUND: u64 = 128 << 20;

fn grow(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open")
        .set_len(len)
        .expect("grow");
}

fn records(storage: &dyn makalog::storage::Storage) -> Vec<(u64, Vec<u8>)> {
    SessionReader::open(storage, S, 1)
        .expect("reader")
        .map(|r| {
            let r = r.expect("valid");
            (r.seq, r.payload)
        })
        .collect()
}

#[test]
fn a_huge_zero_tail_after_the_last_frame_is_neither_read_nor_held() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    two_turns_closed(&owner, S, WriterConfig::default());
    let want_records = records(&*storage);
    let want = rebuild(&*storage, S).expect("rebuild");
    let want_invocations = invocations_from_log(&*storage, &want).expect("invocations");
    assert_eq!(want_invocations.len(), 2);
    grow(&segment(&storage, S), HOLE);

    let reads = |what: &str, f: &dyn Fn()| {
        let before = storage.meter.reads();
        f();
        let read = storage.meter.reads() - before;
        assert!(
            read < READ_BOUND,
            "{what} read {read} bytes of a 1 GiB hole"
        );
    };
    // The short way (the sidecar vouches for the log), the session reader, a rebuild.
    reads("the read-only view", &|| {
        let store = RuntimeEventStore::open(&owner, WriterConfig::default());
        let got = store.list_session_invocations(S).expect("list");
        assert_eq!(got, want_invocations);
    });
    reads("the session reader", &|| {
        assert_eq!(records(&*storage), want_records)
    });
    reads("a rebuild", &|| {
        let view = rebuild(&*storage, S).expect("rebuild");
        let got = invocations_from_log(&*storage, &view).expect("invocations");
        assert_eq!(got, want_invocations);
    });
    // An open for writing takes the log as it is and goes on after its last frame.
    reads("an open for writing", &|| {
        let store = RuntimeEventStore::open(&owner, WriterConfig::default());
        turn(&store, S, "r3", 20.0);
        store.close().expect("close");
    });
    let view = rebuild(&*storage, S).expect("rebuild");
    let all = invocations_from_log(&*storage, &view).expect("all");
    assert_eq!(all.len(), 3);
    // Nothing after a sidecar's last section belongs to it either.
    let sidecar = session_dir(&storage, S).join("index");
    let len = std::fs::metadata(&sidecar).expect("stat").len();
    grow(&sidecar, len + HOLE);
    reads("the read-only view of a sidecar with a zero tail", &|| {
        let store = RuntimeEventStore::open(&owner, WriterConfig::default());
        assert_eq!(store.list_session_invocations(S).expect("list"), all);
    });
    // Without its sidecar, the general way.
    std::fs::remove_file(session_dir(&storage, S).join("index")).expect("remove the sidecar");
    grow(&segment(&storage, S), HOLE);
    reads("the general way", &|| {
        let store = RuntimeEventStore::open(&owner, WriterConfig::default());
        assert_eq!(store.list_session_invocations(S).expect("list").len(), 3);
    });
}

#[test]
fn a_huge_zero_tail_after_the_last_claim_is_neither_read_nor_held() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    let (log, _) = ClaimsLog::open(&owner).expect("open");
    log.close().expect("close");
    let claims = storage_root(&storage).join(makalog::claims::CLAIMS_FILE);
    let len = std::fs::metadata(&claims).expect("stat").len();
    grow(&claims, len + HOLE);
    let before = storage.meter.reads();
    let (log, _) = ClaimsLog::open(&owner).expect("reopen");
    log.close().expect("close");
    let read = storage.meter.reads() - before;
    assert!(read < READ_BOUND, "the claims log's open read {read} bytes");
}

/// A torn create (a segment whose header never reached the disk: only zeros) that claims 1 GiB
/// is quarantined as far as a reader reads it, not copied out whole, and removed.
#[test]
fn a_huge_torn_create_is_quarantined_without_its_zeros() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    let dir = session_dir(&storage, S);
    std::fs::create_dir_all(&dir).expect("session dir");
    let seg = segment(&storage, S);
    std::fs::File::create(&seg).expect("create");
    grow(&seg, HOLE);
    let before = storage.meter.reads();
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    turn(&store, S, "r1", 1.0);
    store.close().expect("close");
    let read = storage.meter.reads() - before;
    assert!(
        read < READ_BOUND,
        "recovery read {read} bytes of a 1 GiB hole"
    );
    let copy = dir.join("00000000000000000001.seg.torn-0");
    let len = std::fs::metadata(&copy).expect("quarantined").len();
    assert!(len < READ_BOUND, "a quarantine copy of {len} bytes");
    let view = rebuild(&*storage, S).expect("rebuild");
    assert_eq!(
        invocations_from_log(&*storage, &view).expect("one").len(),
        1
    );
}
