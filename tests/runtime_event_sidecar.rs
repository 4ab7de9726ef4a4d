//! The runtime-event store's index sidecar: equal to a rebuild, rebuilt when missing or
//! damaged, caught up when stale, never trusted for another session or past its covers, and
//! vouching only for durable records.

mod support;

use makalog::index::{encode_sidecar, rebuild};
use makalog::segment::{Durability, WriterConfig};
use makalog::storage::{RealStorage, Storage};
use makalog::store::RuntimeEventStore;
use makalog::Error;
use std::sync::Arc;
use support::event_store::*;
use support::events::*;
use support::*;

#[test]
fn the_sidecar_equals_a_rebuild_byte_for_byte() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    for r in 0..5 {
        turn(
            &store,
            &format!("run-{r}"),
            r as f64 * 100.0,
            r,
            "completed",
        );
    }
    store.close().expect("close");
    let view = rebuild(&*storage, S).expect("rebuild");
    assert_eq!(
        sidecar_bytes(&storage),
        encode_sidecar(&view, &[]).expect("encode")
    );
}

#[test]
fn a_missing_or_damaged_sidecar_is_rebuilt_at_open() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    turn(&store, "run-1", 1.0, 3, "completed");
    store.close().expect("close");
    let good = sidecar_bytes(&storage);
    let path = storage
        .describe_root()
        .join("sessions")
        .join(S)
        .join("index");
    std::fs::remove_file(&path).expect("remove");
    let store = self::store(&storage);
    assert_eq!(store.list_session_invocations(S).expect("list").len(), 1);
    assert!(
        !path.exists(),
        "a read rebuilds in memory and writes nothing"
    );
    store.open_session_now(S).expect("open");
    assert_eq!(sidecar_bytes(&storage), good, "rebuilt at open");
    drop(store);
    for at in [0usize, 30, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        std::fs::write(&path, &bad).expect("damage");
        let store = self::store(&storage);
        assert_eq!(
            store.list_session_invocations(S).expect("list").len(),
            1,
            "byte {at}"
        );
        assert_eq!(
            std::fs::read(&path).expect("read"),
            bad,
            "a read writes nothing"
        );
        store.open_session_now(S).expect("open");
        assert_eq!(sidecar_bytes(&storage), good, "byte {at} damaged: rebuilt");
    }
}

#[test]
fn a_stale_sidecar_is_caught_up_from_where_it_stops() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    turn(&store, "run-1", 1.0, 2, "completed");
    store.close().expect("close");
    let stale = sidecar_bytes(&storage);
    let store = self::store(&storage);
    turn(&store, "run-2", 50.0, 2, "completed");
    drop(store);
    assert_eq!(
        sidecar_bytes(&storage),
        stale,
        "dropped without close: the sidecar is behind"
    );
    let store = self::store(&storage);
    assert_eq!(store.list_session_invocations(S).expect("list").len(), 2);
    assert_eq!(sidecar_bytes(&storage), stale, "a read writes nothing");
    store.open_session_now(S).expect("open");
    assert_eq!(store.list_session_invocations(S).expect("list").len(), 2);
    assert_eq!(
        sidecar_bytes(&storage),
        stale,
        "caught up in memory, not rebuilt and rewritten at open"
    );
    store.close().expect("close");
    let view = rebuild(&*storage, S).expect("rebuild");
    assert_eq!(
        sidecar_bytes(&storage),
        encode_sidecar(&view, &[]).expect("encode")
    );
}

#[test]
fn a_sidecar_of_another_session_is_not_trusted() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    turn(&store, "run-1", 1.0, 1, "completed");
    for i in 0..3 {
        let e = opening("other", &format!("o-{i}"), "t", i as f64);
        store.append(&e, Durability::Durable).expect("other");
    }
    store.close().expect("close");
    let root = storage.describe_root();
    std::fs::copy(
        root.join("sessions/other/index"),
        root.join("sessions").join(S).join("index"),
    )
    .expect("copy");
    let store = self::store(&storage);
    assert_eq!(store.list_session_invocations(S).expect("list").len(), 1);
}

#[test]
fn damage_in_the_sidecars_id_table_is_found_on_first_use_and_the_index_rebuilt() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    turn(&store, "run-1", 1.0, 3, "completed");
    store.close().expect("close");
    let good = sidecar_bytes(&storage);
    let header = makalog::index::decode_sidecar_header(&good).expect("header");
    let mut bad = good.clone();
    let at = header.sections[2].offset as usize + 8 + 4;
    bad[at] ^= 0x55;
    let path = storage
        .describe_root()
        .join("sessions")
        .join(S)
        .join("index");
    std::fs::write(&path, &bad).expect("damage");
    let store = self::store(&storage);
    assert_eq!(
        store.list_session_invocations(S).expect("list").len(),
        1,
        "opening does not read the id table"
    );
    let repeat = user(S, "run-1", "turn-of-run-1", "run-1-user", 2.0, "hello");
    let again = store.append(&repeat, Durability::Durable).expect("repeat");
    assert!(
        !again.created,
        "identity still answered right after the rebuild"
    );
    assert_eq!(
        sidecar_bytes(&storage),
        good,
        "the damaged sidecar was rebuilt and rewritten"
    );
}

/// An invocation may be opened and ended by one event (an `invocation_opened` event that is
/// also terminal): its opening and its terminal name the same record, which the sidecar's
/// position rule allows, so the sidecar stays trusted.
#[test]
fn an_invocation_opened_and_ended_by_one_event_keeps_its_sidecar_trusted() {
    use makalog::index::{decode_sidecar_header, decode_sidecar_state};
    let (_t, storage) = temp_root();
    let store = store(&storage);
    let mut v = opening(S, "run-1", "turn-1", 1.0).value().clone();
    v["status"] = serde_json::json!("completed");
    let e = makalog::event::RuntimeEvent::from_value(v).expect("an opening that ends it");
    assert!(e.is_terminal());
    store.append(&e, Durability::Durable).expect("append");
    store.close().expect("close");
    let bytes = sidecar_bytes(&storage);
    let header = decode_sidecar_header(&bytes).expect("header");
    let view = decode_sidecar_state(&bytes, &header).expect("trusted");
    let invocation = &view.invocations["run-1"];
    let at = |k: &Option<makalog::index::KeyedEvent>| k.as_ref().map(|k| k.at);
    assert!(at(&invocation.opening).is_some());
    assert_eq!(at(&invocation.opening), at(&invocation.terminal));
}

#[test]
fn a_rebuilt_sidecar_vouches_only_for_durable_records() {
    use makalog::storage::{SimRng, Tear};
    let storage = sim_root();
    {
        let owner = owner(&storage);
        let store = RuntimeEventStore::open(&owner, WriterConfig::default());
        turn(&store, "run-1", 1.0, 1, "completed");
        store.close().expect("close");
        // A process writes a second turn out without syncing it, and dies.
        let config = WriterConfig {
            buffered_limit: 1,
            ..WriterConfig::default()
        };
        let (w, _) = makalog::segment::SegmentWriter::open(&owner, S, config).expect("writer");
        for e in [
            opening(S, "run-2", "turn-2", 50.0),
            terminal(S, "run-2", "turn-2", "end-2", 60.0, "completed"),
        ] {
            w.append(
                makalog::format::RecordKind::RuntimeEvent,
                e.canonical_json().as_bytes(),
                Durability::Buffered,
            )
            .expect("buffered");
        }
        std::mem::forget(w);
        std::mem::forget(owner);
    }
    storage.restart();
    // `makalog index rebuild`, then an owner that lists the session.
    let owner = owner(&storage);
    makalog::index::rebuild_sidecar(&owner, S, WriterConfig::default()).expect("rebuild");
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    let before = store.list_session_invocations(S).expect("list");
    store.open_session_now(S).expect("open");
    std::mem::forget(store);
    std::mem::forget(owner);
    // The power goes: what was listed must still be there.
    storage.crash(Tear::None, &mut SimRng::new(3));
    let owner = self::owner(&storage);
    let store = RuntimeEventStore::open(&owner, WriterConfig::default());
    assert_eq!(store.list_session_invocations(S).expect("list"), before);
}

/// A closed session of one turn whose last record has a bit flipped (its sidecar removed
/// first if `lose_sidecar`): the session's directory, its records before the flip, and the
/// segment's bytes after it.
fn flip_in_last_record(
    storage: &Arc<RealStorage>,
    lose_sidecar: bool,
) -> (std::path::PathBuf, Vec<makalog::segment::Record>, Vec<u8>) {
    let store = store(storage);
    turn(&store, "run-1", 1.0, 2, "completed");
    store.close().expect("close");
    let dir = storage.describe_root().join("sessions").join(S);
    if lose_sidecar {
        std::fs::remove_file(dir.join("index")).expect("remove the sidecar");
    }
    let seg = dir.join("00000000000000000001.seg");
    let recs = read_all(&**storage, S).expect("read");
    let last = recs.last().expect("a record");
    let mut bytes = std::fs::read(&seg).expect("read");
    bytes[(last.offset + 20) as usize] ^= 0x04;
    std::fs::write(&seg, &bytes).expect("flip");
    (dir, recs, bytes)
}

#[test]
fn damage_to_a_record_the_sidecar_vouches_for_is_refused_never_cut_as_torn() {
    let (_t, storage) = temp_root();
    // A bit flip inside the last record, which the sidecar says is durable.
    let (dir, recs, _) = flip_in_last_record(&storage, false);
    let last = recs.last().expect("a record");
    let before = snapshot(&dir);
    let store = self::store(&storage);
    match store.open_session_now(S) {
        Err(makalog::Error::Corrupt { file, offset, .. }) => {
            assert_eq!(file, last.file);
            assert_eq!(offset, last.offset);
        }
        other => panic!("expected a refusal naming the record, got {other:?}"),
    }
    assert_eq!(snapshot(&dir), before, "nothing cut, nothing quarantined");
    drop(store);
    // The index rebuild (`makalog index rebuild`, what `index check` points to) refuses it
    // too: it cut the acknowledged record as a torn tail and wrote a sidecar over the loss.
    let owner = owner(&storage);
    match makalog::index::rebuild_sidecar(&owner, S, WriterConfig::default()) {
        Err(makalog::Error::Corrupt { file, offset, .. }) => {
            assert_eq!(file, last.file);
            assert_eq!(offset, last.offset);
        }
        other => panic!("the rebuild refuses it: {:?}", other.map(|v| v.covers)),
    }
    assert_eq!(
        snapshot(&dir),
        before,
        "nothing cut, nothing quarantined, no sidecar"
    );
}

/// With no sidecar to vouch for a log's last write (a crash lost it), damage there reads as a
/// torn write (DESIGN.md's recovery table): quarantined beside the segment and cut, never
/// silently, and the records before it stay. With the sidecar, the same damage is refused
/// (the test above).
#[test]
fn damage_to_the_last_record_of_a_log_without_a_sidecar_is_quarantined_as_a_torn_write() {
    let (_t, storage) = temp_root();
    let (dir, recs, bytes) = flip_in_last_record(&storage, true);
    let last = recs.last().expect("a record");
    let store = self::store(&storage);
    store.open_session_now(S).expect("open");
    let kept = read_all(&*storage, S).expect("read");
    assert_eq!(kept.len(), recs.len() - 1, "only the damaged record is cut");
    let quarantined = dir.join(format!("00000000000000000001.seg.torn-{}", last.offset));
    assert_eq!(
        std::fs::read(&quarantined).expect("quarantine file"),
        bytes[last.offset as usize..(last.end as usize)],
        "the damaged bytes are kept"
    );
    store.close().expect("close");
}

#[test]
fn a_failure_to_rewrite_the_sidecar_never_fails_an_append_to_the_log() {
    use makalog::storage::{Fault, FaultKind, Storage};
    let sidecar = std::path::Path::new("sessions").join(S).join("index");
    let mut refused_by_the_log = 0;
    for k in 1..=40 {
        let storage = sim_root();
        let owner = owner(&storage);
        let store = RuntimeEventStore::open(&owner, WriterConfig::default());
        turn(&store, "run-1", 1.0, 2, "completed");
        store.close().expect("close");
        // Damage in the sidecar's id table: found on first use, the view rebuilt and the
        // sidecar rewritten.
        let bytes = storage.read_file(&sidecar).expect("sidecar");
        let header = makalog::index::decode_sidecar_header(&bytes).expect("header");
        let at = header.sections[2].offset + 8;
        storage
            .corrupt(&sidecar, at, &[bytes[at as usize] ^ 0xff])
            .expect("damage");
        let store = RuntimeEventStore::open(&owner, WriterConfig::default());
        store.open_session_now(S).expect("open");
        storage.inject(Fault {
            nth: storage.operations() + k,
            forever: false,
            kind: FaultKind::Eio,
        });
        match store.append(&opening(S, "run-2", "turn-2", 50.0), Durability::Durable) {
            Ok(_) => {}
            Err(makalog::Error::Io { file, .. }) | Err(makalog::Error::Poisoned { file }) => {
                assert!(
                    !file.starts_with(&sidecar),
                    "fault {k}: the append failed on the sidecar {}",
                    file.display()
                );
                refused_by_the_log += 1;
            }
            Err(e) => panic!("fault {k}: {e}"),
        }
    }
    assert!(refused_by_the_log > 0, "some faults hit the log itself");
}

/// A frame appended after what the sidecar covers, recording a durable sequence number below
/// the last covered frame's, is damage (as a scan from the start says): the store's reads and
/// its open for writing, which resume from the sidecar, refuse it at that frame's offset.
#[test]
fn a_frame_past_the_sidecar_whose_durable_seq_falls_is_refused_as_damage() {
    use makalog::format::RecordKind;
    let (_t, storage) = temp_root();
    let store = store(&storage);
    turn(&store, "run-1", 1.0, 2, "completed");
    store.close().expect("close");
    let recs = read_all(&*storage, S).expect("read");
    let last = recs.last().expect("records");
    assert!(last.durable_seq.is_some_and(|d| d > 0), "{last:?}");
    let event = text(S, "run-2", "turn-of-run-2", "run-2-text", 60.0, "late");
    let body = event.canonical_json().as_bytes();
    let at = append_frame_after(&storage, S, last, (RecordKind::RuntimeEvent, body), 0);

    let store = self::store(&storage);
    let listed = store.list_session_invocations(S);
    assert!(
        matches!(&listed, Err(Error::Corrupt { offset, .. }) if *offset == at),
        "a read: {listed:?}"
    );
    let opened = store.open_session_now(S);
    assert!(
        matches!(&opened, Err(Error::Corrupt { offset, .. }) if *offset == at),
        "an open for writing: {opened:?}"
    );
    assert!(!makalog::verify::verify_root(&*storage)
        .expect("verify")
        .is_clean());
}
