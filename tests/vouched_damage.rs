//! What a sidecar recorded as durable is never read as a write in flight (FORMAT.md, "What a
//! sidecar recorded as durable is never cut"): a read-only view of a session whose last record,
//! covered by its sidecar, was damaged reports damage there, naming the file and offset, as an
//! open for writing refuses the session, instead of answering from the records before it.

mod support;

use makalog::segment::WriterConfig;
use makalog::store::RuntimeEventStore;
use makalog::Error;
use support::cost::*;

const S: &str = "s";

#[test]
fn a_damaged_record_the_sidecar_covers_is_damage_to_a_read_only_view_too() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    two_turns_closed(&owner, S, WriterConfig::default());
    let last = last_record(&storage, S);
    // A flipped bit in the last record's payload: its CRC fails, no record follows it.
    let seg = segment(&storage, S);
    let mut bytes = std::fs::read(&seg).expect("read");
    bytes[last.end as usize - 2] ^= 0x20;
    std::fs::write(&seg, &bytes).expect("write");

    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    match store.list_session_invocations(S) {
        Err(Error::Corrupt { file, offset, .. }) => {
            assert!(file.ends_with("00000000000000000001.seg"), "{file:?}");
            assert_eq!(offset, last.offset, "where the damaged record starts");
        }
        other => panic!("read the records before the damage as the whole log: {other:?}"),
    }
    // An open for writing refuses it alike, and cuts nothing.
    let e = store
        .append(
            &support::events::opening(S, "r3", "turn-r3", 20.0),
            makalog::segment::Durability::Durable,
        )
        .expect_err("refused");
    assert!(e.to_string().contains("recorded as durable"), "{e}");
    assert_eq!(std::fs::read(&seg).expect("read"), bytes, "nothing cut");
}

/// Everything a read of `S` (by the store, and from the segments alone) and an open for writing
/// answer for a log that stops before what its sidecar recorded as durable: each refuses, naming
/// `file` at `offset`, and nothing under the session's directory `dir` is written.
fn refused_where_the_log_ends(
    store: &RuntimeEventStore,
    dir: &std::path::Path,
    file: &std::path::Path,
    offset: u64,
) {
    let before = support::snapshot(dir);
    match store.list_session_invocations(S) {
        Err(Error::Corrupt {
            file: f, offset: o, ..
        }) => {
            assert!(file.ends_with(&f), "{f:?} is not {file:?}");
            assert_eq!(o, offset, "where the log now ends");
        }
        other => panic!("read the records left as the whole log: {other:?}"),
    }
    // Read from the segments alone, the sidecar's durable point still holds.
    let storage =
        makalog::storage::RealStorage::new(dir.parent().and_then(|p| p.parent()).expect("root"));
    match makalog::store::read_only_index(&storage, S, makalog::store::Sidecars::Ignored) {
        Err(Error::Corrupt {
            file: f, offset: o, ..
        }) => {
            assert!(file.ends_with(&f), "{f:?} is not {file:?}");
            assert_eq!(o, offset, "where the log now ends");
        }
        other => panic!("read from the segments, the loss went unseen: {other:?}"),
    }
    let e = store
        .append(
            &support::events::opening(S, "r9", "turn-r9", 90.0),
            makalog::segment::Durability::Durable,
        )
        .expect_err("refused");
    assert!(e.to_string().contains("recorded as durable"), "{e}");
    assert_eq!(support::snapshot(dir), before, "nothing written");
}

#[test]
fn a_log_cut_cleanly_before_what_the_sidecar_covers_is_damage() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    two_turns_closed(&owner, S, WriterConfig::default());
    let last = last_record(&storage, S);
    // The last record removed whole: what is left is a clean log, one record shorter.
    let seg = segment(&storage, S);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .expect("open");
    file.set_len(last.offset).expect("cut");
    drop(file);

    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    refused_where_the_log_ends(&store, &session_dir(&storage, S), &seg, last.offset);
}

#[test]
fn a_last_segment_the_sidecar_covers_removed_is_damage() {
    let (_t, storage) = metered();
    let owner = owner_of(&storage);
    // Segments small enough that two turns roll at least once.
    let config = WriterConfig {
        segment_size: 2048,
        ..WriterConfig::default()
    };
    two_turns_closed(&owner, S, config.clone());
    let mut segs: Vec<_> = std::fs::read_dir(session_dir(&storage, S))
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    segs.sort();
    assert!(segs.len() >= 2, "rolled: {segs:?}");
    let gone = segs.pop().expect("last");
    std::fs::remove_file(&gone).expect("remove");
    let left = segs.last().expect("one left").clone();
    // The sealed segment left ends with its footer; its records end before it.
    let records_end = last_record(&storage, S).end;

    let store = RuntimeEventStore::open(&owner, config);
    refused_where_the_log_ends(&store, &session_dir(&storage, S), &left, records_end);
}
