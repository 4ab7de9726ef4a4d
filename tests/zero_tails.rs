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
use std::sync::atomic::Ordering;
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

/// Writes one non-zero byte `HOLE` bytes past the end of `path`: a hole with data after it, so
/// none of it is a zero tail. Returns where the hole starts.
fn hole_then_data(path: &Path) -> u64 {
    use std::os::unix::fs::FileExt;
    let len = std::fs::metadata(path).expect("stat").len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    file.write_all_at(&[1], len + HOLE)
        .expect("write past a hole");
    len
}

/// The file's length and its bytes before the hole: what a refusal must leave as it was.
fn before_hole(path: &Path, hole: u64) -> (u64, Vec<u8>) {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .expect("open")
        .take(hole)
        .read_to_end(&mut head)
        .expect("read");
    (std::fs::metadata(path).expect("stat").len(), head)
}

/// A refusal of `path` whose hole starts at `hole`: it names the file and a byte at the start of
/// the hole (the file system reports holes in whole blocks, of up to 1 MiB here).
fn assert_refused(what: &str, err: &str, path: &Path, hole: u64) {
    let name = path.file_name().expect("name").to_string_lossy();
    assert!(err.contains(&*name), "{what}: {err}");
    assert!(err.contains("holes"), "{what}: {err}");
    let at: u64 = err
        .split("starts at byte ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{what} names no byte: {err}"));
    assert!(
        (hole..hole + (1 << 20)).contains(&at),
        "{what}: byte {at}, the hole starts at {hole}"
    );
}

/// A hole between a log's bytes is no zero tail: a reader would hold it to read what follows.
/// More of them than a reader holds is refused, with an error naming the file and where the
/// holes start, by every reader of a session, without reading them and with nothing written.
#[test]
fn a_huge_hole_inside_a_segment_is_refused_unread_and_left_as_it_was() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    two_turns_closed(&owner, S, WriterConfig::default());
    let seg = segment(&storage, S);
    let hole = hole_then_data(&seg);
    let was = before_hole(&seg, hole);
    let reads = |what: &str, f: &dyn Fn() -> String| {
        let before = storage.meter.reads();
        let err = f();
        let read = storage.meter.reads() - before;
        assert!(
            read < READ_BOUND,
            "{what} read {read} bytes of a 1 GiB hole"
        );
        assert_refused(what, &err, &seg, hole);
    };
    reads("the read-only view", &|| {
        let store = RuntimeEventStore::open(&owner, WriterConfig::default());
        let err = store.list_session_invocations(S).expect_err("refused");
        err.to_string()
    });
    reads("a rebuild", &|| {
        rebuild(&*storage, S).expect_err("refused").to_string()
    });
    reads("verify", &|| {
        let report = makalog::verify::verify_root(&*storage).expect("report");
        assert!(!report.is_clean());
        report.findings.join("\n")
    });
    reads("an open for writing", &|| {
        let store = RuntimeEventStore::open(&owner, WriterConfig::default());
        let e = support::events::opening(S, "r3", "turn-r3", 20.0);
        let err = store
            .append(&e, makalog::segment::Durability::Durable)
            .expect_err("refused");
        store.close().expect("close");
        err.to_string()
    });
    assert_eq!(before_hole(&seg, hole), was, "nothing written");
}

/// A sealed segment (mapped, not read, when it ends in data) with a hole before its last byte
/// is refused before it is mapped.
#[test]
fn a_huge_hole_inside_a_sealed_segment_is_refused_before_it_is_mapped() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    let small = WriterConfig {
        segment_size: 1 << 10,
        ..WriterConfig::default()
    };
    two_turns_closed(&owner, S, small);
    let sealed = segment(&storage, S);
    assert!(
        session_dir(&storage, S)
            .join("00000000000000000002.seg")
            .exists(),
        "the session rolled"
    );
    std::fs::remove_file(session_dir(&storage, S).join("index")).expect("remove the sidecar");
    let hole = hole_then_data(&sealed);
    let before = storage.meter.reads();
    let err = rebuild(&*storage, S).expect_err("refused").to_string();
    let read = storage.meter.reads() - before;
    assert!(read < READ_BOUND, "a rebuild read {read} bytes");
    assert_refused("a rebuild", &err, &sealed, hole);
    assert_eq!(
        storage.meter.mapped_bytes.load(Ordering::SeqCst),
        0,
        "nothing mapped"
    );
}

#[test]
fn a_huge_hole_inside_the_claims_log_is_refused_unread() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    let (log, _) = ClaimsLog::open(&owner).expect("open");
    log.close().expect("close");
    let claims = storage_root(&storage).join(makalog::claims::CLAIMS_FILE);
    let hole = hole_then_data(&claims);
    let was = before_hole(&claims, hole);
    let before = storage.meter.reads();
    let err = match ClaimsLog::open(&owner) {
        Ok(_) => panic!("the claims log opened past a 1 GiB hole"),
        Err(e) => e.to_string(),
    };
    let read = storage.meter.reads() - before;
    assert!(read < READ_BOUND, "the claims log's open read {read} bytes");
    assert_refused("the claims log's open", &err, &claims, hole);
    assert_eq!(before_hole(&claims, hole), was, "nothing written");
}

/// A sidecar is a cache written whole and renamed into place: one with a 1 GiB hole before its
/// last byte is not mapped (touching the hole through the mapping would fault in its apparent
/// size) nor read; the owner and a read without the lease answer from the segments.
#[test]
fn a_sidecar_with_a_huge_hole_is_neither_mapped_nor_read_and_the_segments_answer() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    two_turns_closed(&owner, S, WriterConfig::default());
    let want = {
        let view = rebuild(&*storage, S).expect("rebuild");
        invocations_from_log(&*storage, &view).expect("invocations")
    };
    hole_then_data(&session_dir(&storage, S).join("index"));
    let (mapped, reads) = (
        storage.meter.mapped_bytes.load(Ordering::SeqCst),
        storage.meter.reads(),
    );
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    assert_eq!(store.list_session_invocations(S).expect("list"), want);
    store.open_session_now(S).expect("the owner opens it");
    assert_eq!(store.list_session_invocations(S).expect("list"), want);
    drop(store);
    let view = makalog::store::read_only_index(&*storage, S, Default::default())
        .expect("read without the lease")
        .expect("the session");
    assert_eq!(
        invocations_from_log(&*storage, &view).expect("invocations"),
        want
    );
    // What is mapped is the sidecar the owner wrote anew, never the one with the hole.
    let mapped = storage.meter.mapped_bytes.load(Ordering::SeqCst) - mapped;
    assert!(mapped < READ_BOUND, "{mapped} bytes mapped");
    let read = storage.meter.reads() - reads;
    assert!(read < READ_BOUND, "the reads read {read} bytes");
}

/// Recovery copies a torn tail aside under `<segment>.torn-<offset>` and keeps any file already
/// there that is not a prefix of it. One there that claims 1 GiB (a hole, then a byte) is
/// another tear's: it is kept, not read, and the open goes on.
#[test]
fn a_huge_file_where_a_tear_is_copied_aside_is_kept_unread() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    two_turns_closed(&owner, S, WriterConfig::default());
    let seg = segment(&storage, S);
    let end = std::fs::metadata(&seg).expect("stat").len();
    {
        use std::os::unix::fs::FileExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&seg)
            .expect("open");
        file.write_all_at(&[0xab; 100], end).expect("a torn write");
    }
    let dir = session_dir(&storage, S);
    let other = dir.join(format!("00000000000000000001.seg.torn-{end}"));
    std::fs::write(&other, b"another tear").expect("write");
    let hole = hole_then_data(&other);
    let kept = before_hole(&other, hole);
    let before = storage.meter.reads();
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    turn(&store, S, "r3", 20.0);
    store.close().expect("close");
    let read = storage.meter.reads() - before;
    assert!(read < READ_BOUND, "recovery read {read} bytes");
    assert_eq!(before_hole(&other, hole), kept, "the other tear is kept");
    let copy = dir.join(format!("00000000000000000001.seg.torn-{end}.1"));
    assert_eq!(std::fs::read(copy).expect("copied aside"), [0xab; 100]);
    let view = rebuild(&*storage, S).expect("rebuild");
    assert_eq!(
        invocations_from_log(&*storage, &view).expect("three").len(),
        3
    );
}

/// A sealed segment whose roll was cut short before its zeros were cut may end in zeros after
/// its footer; one grown to 1 GiB of them is read, and compared with the disk at an open for
/// writing, only as far as a reader reads it (it was compared to its end, twice over).
#[test]
fn a_huge_zero_tail_after_a_seal_is_not_compared_with_the_disk_to_its_end() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    let small = WriterConfig {
        segment_size: 1 << 10,
        ..WriterConfig::default()
    };
    two_turns_closed(&owner, S, small.clone());
    std::fs::remove_file(session_dir(&storage, S).join("index")).expect("remove the sidecar");
    let sealed = segment(&storage, S);
    let len = std::fs::metadata(&sealed).expect("stat").len();
    grow(&sealed, len + HOLE);
    let before = storage.meter.reads();
    let store = RuntimeEventStore::open(&owner, small);
    turn(&store, S, "r3", 20.0);
    store.close().expect("close");
    let read = storage.meter.reads() - before;
    assert!(read < READ_BOUND, "an open for writing read {read} bytes");
    let view = rebuild(&*storage, S).expect("rebuild");
    assert_eq!(
        invocations_from_log(&*storage, &view).expect("three").len(),
        3
    );
}
