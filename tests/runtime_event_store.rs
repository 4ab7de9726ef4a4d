//! The runtime-event store: sealing, identity, sequence numbers, read orders, the invocation
//! index, concurrent sessions and closes. Its index sidecar: `runtime_event_sidecar.rs`.

mod support;

use makalog::index::{encode_sidecar, rebuild, runtime_invocations_from_session_events};
use makalog::segment::{Durability, WriterConfig};
use makalog::storage::Storage;
use makalog::store::RuntimeEventStore;
use makalog::Error;
use std::sync::Arc;
use support::event_store::*;
use support::events::*;
use support::*;

#[test]
fn events_get_sequence_numbers_per_invocation_and_partials_get_none() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    let seqs: Vec<Option<u64>> = [
        opening(S, "run-1", "turn-1", 1.0),
        partial(S, "run-1", "turn-1", "chunk-1", 2.0, "hel"),
        user(S, "run-1", "turn-1", "u-1", 3.0, "hi"),
        opening(S, "run-2", "turn-2", 4.0),
        text(S, "run-1", "turn-1", "t-1", 5.0, "a"),
    ]
    .iter()
    .map(|e| {
        store
            .append(e, Durability::Buffered)
            .expect("append")
            .event_seq
    })
    .collect();
    assert_eq!(seqs, vec![Some(1), None, Some(2), Some(1), Some(3)]);
    let run1: Vec<String> = store
        .read_immutable_runtime_events(S, "run-1")
        .expect("read")
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(
        run1,
        ["invocation_opened:run-1", "u-1", "t-1"],
        "partials are not immutable events"
    );
}

#[test]
fn a_terminal_event_seals_its_run() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    turn(&store, "run-1", 10.0, 1, "completed");
    let late = text(S, "run-1", "turn-of-run-1", "late", 500.0, "too late");
    match store.append(&late, Durability::Durable) {
        Err(Error::RunSealed { session_id, run_id }) => {
            assert_eq!((session_id.as_str(), run_id.as_str()), (S, "run-1"));
        }
        other => panic!("expected RunSealed, got {other:?}"),
    }
    let late_partial = partial(S, "run-1", "turn-of-run-1", "late-chunk", 500.0, "x");
    assert!(matches!(
        store.append(&late_partial, Durability::Buffered),
        Err(Error::RunSealed { .. })
    ));
    turn(&store, "run-2", 20.0, 0, "failed");
    store.close().expect("close");
    let store = self::store(&storage);
    assert!(
        matches!(
            store.append(&late, Durability::Durable),
            Err(Error::RunSealed { .. })
        ),
        "the seal survives reopening"
    );
}

#[test]
fn re_appending_an_identical_event_returns_its_sequence_and_writes_nothing() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    store
        .append(&opening(S, "run-1", "turn-1", 1.0), Durability::Durable)
        .expect("opening");
    let e = user(S, "run-1", "turn-1", "u-1", 2.0, "hi");
    let first = store.append(&e, Durability::Durable).expect("first");
    let before = snapshot(&storage.describe_root().join("sessions"));
    let again = store.append(&e, Durability::Durable).expect("again");
    assert_eq!(
        (again.event_seq, again.record_seq, again.created),
        (first.event_seq, first.record_seq, false)
    );
    assert_eq!(before, snapshot(&storage.describe_root().join("sessions")));
    let other = user(S, "run-1", "turn-1", "u-1", 2.0, "a different text");
    match store.append(&other, Durability::Durable) {
        Err(Error::IdentityConflict { what }) => {
            assert_eq!(what, "RuntimeEvent identity conflict for u-1")
        }
        r => panic!("expected an identity conflict, got {r:?}"),
    }
    store.close().expect("close");
    let store = self::store(&storage);
    assert!(
        !store
            .append(&e, Durability::Durable)
            .expect("after reopening")
            .created,
        "found through the sidecar"
    );
    assert!(matches!(
        store.append(&other, Durability::Durable),
        Err(Error::IdentityConflict { .. })
    ));
}

#[test]
fn ids_that_contradict_the_invocation_run_turn_identity_are_refused() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    store
        .append(&opening(S, "run-1", "turn-1", 1.0), Durability::Durable)
        .expect("opening");
    let wrong_turn = user(S, "run-1", "turn-2", "u-1", 2.0, "hi");
    assert!(matches!(
        store.append(&wrong_turn, Durability::Durable),
        Err(Error::IdentityConflict { .. })
    ));
    let mut v = user(S, "run-1", "turn-1", "u-2", 2.0, "hi").value().clone();
    v["invocationId"] = "another-invocation".into();
    let wrong_invocation = makalog::event::RuntimeEvent::from_value(v).expect("event");
    assert!(matches!(
        store.append(&wrong_invocation, Durability::Durable),
        Err(Error::IdentityConflict { .. })
    ));
}

#[test]
fn session_events_read_in_ts_run_sequence_id_order() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    store
        .append(&opening(S, "run-b", "turn-b", 5.0), Durability::Durable)
        .expect("a");
    store
        .append(&opening(S, "run-a", "turn-a", 5.0), Durability::Durable)
        .expect("b");
    store
        .append(
            &user(S, "run-a", "turn-a", "z", 3.0, "early"),
            Durability::Durable,
        )
        .expect("c");
    store
        .append(
            &user(S, "run-a", "turn-a", "y", 5.0, "same ts, later seq"),
            Durability::Durable,
        )
        .expect("d");
    let ids: Vec<String> = store
        .read_session_runtime_events(S)
        .expect("read")
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(
        ids,
        [
            "z",
            "invocation_opened:run-a",
            "y",
            "invocation_opened:run-b"
        ]
    );
}

#[test]
fn the_invocation_index_equals_a_rebuild_from_events_and_keeps_the_first_terminal() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    turn(&store, "run-2", 20.0, 2, "failed");
    turn(&store, "run-1", 10.0, 1, "completed");
    store
        .append(&opening(S, "run-3", "turn-3", 30.0), Durability::Durable)
        .expect("open only");
    let listed = store.list_session_invocations(S).expect("list");
    let rebuilt = runtime_invocations_from_session_events(
        S,
        &store.read_session_runtime_events(S).expect("read"),
    );
    assert_eq!(listed, rebuilt);
    let summary: Vec<(&str, Option<&str>)> = listed
        .iter()
        .map(|i| (i.invocation_id.as_str(), i.outcome()))
        .collect();
    assert_eq!(
        summary,
        [
            ("run-1", Some("completed")),
            ("run-2", Some("failed")),
            ("run-3", None)
        ]
    );
}

/// Seed 004 (runtime-invocation-index.test.ts), at the store level: three invocations written
/// through the production API; the index equals a rebuild from the events alone; a straggler
/// appended after the first terminal by a raw append that bypasses sealing (as an older writer
/// could have left it); reopened, the index still equals the rebuild and the first invocation
/// is still completed.
#[test]
fn seed_004_the_invocation_index_is_a_query_over_canonical_events() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    let mut clock = 1_000.0;
    let mut ids = 0;
    let mut next = |clock: &mut f64| {
        ids += 1;
        *clock += 1.0;
        (format!("index-{ids}"), *clock)
    };
    for turn_id in ["turn-1", "turn-2", "turn-3"] {
        let (run, ts) = next(&mut clock);
        store
            .append(&opening(S, &run, turn_id, ts), Durability::Durable)
            .expect("opening");
        let (uid, ts) = next(&mut clock);
        store
            .append(
                &user(S, &run, turn_id, &uid, ts, turn_id),
                Durability::Durable,
            )
            .expect("user");
        store
            .append(
                &terminal(
                    S,
                    &run,
                    turn_id,
                    &format!("{turn_id}-complete"),
                    2.0,
                    "completed",
                ),
                Durability::Durable,
            )
            .expect("terminal");
    }
    let invocations = store.list_session_invocations(S).expect("list");
    let rebuilt = runtime_invocations_from_session_events(
        S,
        &store.read_session_runtime_events(S).expect("read"),
    );
    assert_eq!(invocations.len(), 3);
    assert_eq!(
        invocations, rebuilt,
        "the index must return exactly what a rebuild from events alone produces"
    );
    for inv in &invocations {
        assert_eq!(
            inv.terminal_event
                .as_ref()
                .and_then(|t| t["status"].as_str()),
            Some("completed"),
            "a finished invocation must expose its terminal event through the index"
        );
    }
    let first = invocations[0].clone();
    store.close().expect("close");

    let straggler = text(
        S,
        &first.run_id,
        &first.turn_id,
        "post-terminal-straggler",
        9_999.0,
        "arrived after the run was sealed",
    );
    let raw = makalog::segment::SegmentWriter::open(&owner(&storage), S, WriterConfig::default())
        .expect("raw writer")
        .0;
    raw.append(
        makalog::format::RecordKind::RuntimeEvent,
        straggler.canonical_json().as_bytes(),
        Durability::Durable,
    )
    .expect("raw append");
    drop(raw);

    let reopened = self::store(&storage);
    let after = reopened.list_session_invocations(S).expect("list");
    assert_eq!(
        after,
        runtime_invocations_from_session_events(
            S,
            &reopened.read_session_runtime_events(S).expect("read")
        ),
        "the index and a rebuild must still agree once a straggler follows the terminal"
    );
    let status = after
        .iter()
        .find(|i| i.invocation_id == first.invocation_id)
        .and_then(|i| i.terminal_event.as_ref())
        .and_then(|t| t["status"].as_str().map(str::to_owned));
    assert_eq!(
        status.as_deref(),
        Some("completed"),
        "a run that ended stays ended when an unsealed-era straggler follows it"
    );
    assert!(
        reopened
            .read_immutable_runtime_events(S, &first.run_id)
            .expect("read")
            .iter()
            .any(|e| e.id() == "post-terminal-straggler"),
        "the straggler is in the ledger"
    );
    reopened.open_session_now(S).expect("open for writing");
    assert_eq!(
        reopened.list_session_invocations(S).expect("list"),
        after,
        "the session open for writing answers as its read-only view did"
    );
    reopened.close().expect("close");
    let view = rebuild(&*storage, S).expect("rebuild");
    assert_eq!(
        sidecar_bytes(&storage),
        encode_sidecar(&view, &[]).expect("encode")
    );
}

#[test]
fn the_index_reads_the_same_facts_from_stored_json_as_the_strict_decoder() {
    let events = [
        opening(S, "r", "t", 1.0),
        user(S, "r", "t", "u\\\"1", 2.5, "quote \" and \u{e9}"),
        partial(S, "r", "t", "p", 3.0, "chunk"),
        terminal(S, "r", "t", "end", 4.0, "aborted"),
        terminal(S, "r", "t", "end2", 4.0, "streaming"),
        text(S, "r", "t", "x", 1e21, "big ts"),
    ];
    for e in &events {
        let peeked = makalog::index::EventFacts::peek(e.canonical_json()).expect("peek");
        assert_eq!(
            peeked,
            makalog::index::EventFacts::of(e),
            "{}",
            e.canonical_json()
        );
    }
    assert!(
        makalog::index::EventFacts::of(&events[4]).terminal,
        "endInvocation alone is terminal"
    );
    assert!(!makalog::index::EventFacts::of(&events[2]).terminal);
}

#[test]
fn reading_a_session_that_was_never_written_answers_empty_and_creates_nothing() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    let before = snapshot(&storage.describe_root());
    assert!(store
        .list_session_invocations("never-written")
        .expect("list")
        .is_empty());
    assert!(store
        .read_session_runtime_events("never-written")
        .expect("read")
        .is_empty());
    assert!(store
        .read_immutable_runtime_events("never-written", "r")
        .expect("read")
        .is_empty());
    assert_eq!(before, snapshot(&storage.describe_root()));
    assert!(matches!(
        store.list_session_invocations("../x"),
        Err(Error::InvalidInput(_))
    ));
}

#[test]
fn a_session_can_be_opened_for_writing_before_its_first_append() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    store.open_session_now(S).expect("open");
    assert!(storage.describe_root().join("sessions").join(S).is_dir());
    assert!(store.list_session_invocations(S).expect("list").is_empty());
}

#[test]
fn concurrent_appends_across_sessions_open_each_session_once_and_lose_nothing() {
    let (_t, storage) = temp_root();
    let store = Arc::new(store(&storage));
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let session = format!("session-{}", t % 4);
                let run = format!("run-{t}");
                let e = |ev: makalog::event::RuntimeEvent| {
                    store.append(&ev, Durability::Durable).expect("append")
                };
                e(opening(&session, &run, "turn", t as f64));
                for i in 0..20 {
                    e(text(
                        &session,
                        &run,
                        "turn",
                        &format!("{run}-{i}"),
                        t as f64 + i as f64,
                        "x",
                    ));
                }
                e(terminal(
                    &session,
                    &run,
                    "turn",
                    &format!("{run}-end"),
                    100.0,
                    "completed",
                ));
            })
        })
        .collect();
    for h in handles {
        h.join().expect("join");
    }
    for s in 0..4 {
        let session = format!("session-{s}");
        let listed = store.list_session_invocations(&session).expect("list");
        assert_eq!(listed.len(), 2, "{session}");
        assert!(listed.iter().all(|i| i.outcome() == Some("completed")));
        assert_eq!(
            store
                .read_session_runtime_events(&session)
                .expect("read")
                .len(),
            2 * 22
        );
    }
    Arc::try_unwrap(store)
        .ok()
        .expect("sole owner")
        .close()
        .expect("close");
    for s in 0..4 {
        let session = format!("session-{s}");
        let view = rebuild(&*storage, &session).expect("rebuild");
        let sidecar = std::fs::read(
            storage
                .describe_root()
                .join("sessions")
                .join(&session)
                .join("index"),
        )
        .expect("sidecar");
        assert_eq!(
            sidecar,
            encode_sidecar(&view, &[]).expect("encode"),
            "{session}"
        );
    }
}

#[test]
fn buffered_partial_events_are_written_out_once_they_pass_the_buffered_limit() {
    let (_t, storage) = temp_root();
    let config = WriterConfig {
        buffered_limit: 4096,
        ..WriterConfig::default()
    };
    let owner = owner(&storage);
    let store = RuntimeEventStore::open(&owner, config);
    store
        .append(&opening(S, "run-1", "turn-1", 1.0), Durability::Durable)
        .expect("opening");
    for i in 0..1000 {
        let chunk = partial(
            S,
            "run-1",
            "turn-1",
            &format!("chunk-{i}"),
            2.0 + f64::from(i),
            "some streamed words",
        );
        store.append(&chunk, Durability::Buffered).expect("partial");
    }
    // No durable event since the opening: what is in the file was written out (not synced)
    // because the queue passed the limit; at most the limit stays in memory.
    let on_disk = makalog::segment::SessionReader::open(&*storage, S, 1)
        .expect("reader")
        .count();
    assert!(
        on_disk >= 1 + 1000 - 20,
        "{on_disk} records written out of 1,001"
    );
    store.close().expect("close");
    assert_eq!(
        makalog::segment::SessionReader::open(&*storage, S, 1)
            .expect("reader")
            .count(),
        1001
    );
}

#[test]
fn a_run_is_sealed_only_by_a_durable_terminal_never_by_one_whose_sync_may_fail() {
    use std::sync::mpsc;
    use std::time::Duration;
    let t = tempfile::tempdir().expect("tmp");
    let (storage, _) = support::counting::counting(t.path().join("root"), u64::MAX);
    makalog::root::create_or_open_root(&*storage).expect("root");
    let owner = owner(&storage);
    let store = std::sync::Arc::new(RuntimeEventStore::open(&owner, WriterConfig::default()));
    store
        .append(&opening(S, "run-1", "turn-1", 1.0), Durability::Durable)
        .expect("opening");
    // The terminal's sync is held at the gate.
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    *storage.meter.gate.lock().expect("meter") = Some(support::counting::SyncGate {
        entered: entered_tx,
        release: release_rx,
    });
    let ender = {
        let store = store.clone();
        std::thread::spawn(move || {
            store.append(
                &terminal(S, "run-1", "turn-1", "end-1", 9.0, "completed"),
                Durability::Durable,
            )
        })
    };
    entered.recv().expect("the terminal's sync started");
    // An event for the run while the terminal is not durable: refusing it as sealed would
    // refuse it for a terminal that may never exist.
    let (answer_tx, answer) = mpsc::channel();
    {
        let store = store.clone();
        std::thread::spawn(move || {
            let r = store.append(
                &text(S, "run-1", "turn-1", "late", 10.0, "words"),
                Durability::Durable,
            );
            let _ = answer_tx.send(r);
        });
    }
    // A generous pause, not a measurement: long enough for a wrong answer to arrive.
    if let Ok(r) = answer.recv_timeout(Duration::from_millis(500)) {
        panic!("answered before the terminal was durable: {r:?}");
    }
    release.send(false).expect("fail the terminal's sync");
    assert!(
        ender.join().expect("join").is_err(),
        "the terminal was not acknowledged"
    );
    match answer
        .recv_timeout(Duration::from_secs(60))
        .expect("an answer")
    {
        Err(makalog::Error::RunSealed { .. }) => {
            panic!("refused as sealed by a terminal that failed")
        }
        Err(_) => {}
        Ok(a) => panic!("acknowledged on a failed writer: {a:?}"),
    }
}

#[test]
fn a_segment_created_by_a_roll_a_crash_cut_short_is_made_durable_before_anything_is_acknowledged_in_it(
) {
    use makalog::storage::{SimRng, Tear};
    let config = WriterConfig {
        max_payload: 1024,
        ..WriterConfig::default()
    };
    // Everything up to the roll, the same way each time.
    let prepare = |crash_at: Option<u64>| -> (Arc<makalog::storage::SimStorage>, u64) {
        let storage = sim_root();
        let owner = owner(&storage);
        let store = RuntimeEventStore::open(&owner, config.clone());
        turn(&store, "run-1", 1.0, 2, "completed");
        store
            .close()
            .expect("close: the sidecar vouches for the whole log");
        let before = storage.persistence_points();
        if let Some(k) = crash_at {
            storage.crash_before_point(before + k);
        }
        // A record above the segment's bound rolls: seal, create the next segment, sync it,
        // sync its directory, then the record.
        if let Ok((w, _)) = makalog::segment::SegmentWriter::open(
            &owner,
            S,
            WriterConfig {
                max_payload: 8192,
                ..config.clone()
            },
        ) {
            let _ = w.append(
                makalog::format::RecordKind::Message,
                &vec![b'x'; 2000],
                Durability::Durable,
            );
            std::mem::forget(w);
        }
        std::mem::forget(owner);
        (storage, before)
    };
    let new_segment = |files: &std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>| {
        files
            .keys()
            .filter(|p| p.to_string_lossy().ends_with(".seg"))
            .count()
            > 1
    };
    // The last crash point where the new segment exists, its header written and synced, but
    // its directory entry not yet durable.
    let k = (1..40)
        .rev()
        .find(|&k| {
            let (s, _) = prepare(Some(k));
            new_segment(&s.live_files()) && !new_segment(&s.durable_files())
        })
        .expect("a crash point between the create and its directory's sync");
    let (storage, _) = prepare(Some(k));
    // The process died there; the machine stays up, then a new owner opens and appends.
    storage.restart();
    let owner = owner(&storage);
    let store = RuntimeEventStore::open(&owner, config.clone());
    let acked = text(S, "run-2", "turn-2", "after-restart", 50.0, "acknowledged");
    store
        .append(&opening(S, "run-2", "turn-2", 49.0), Durability::Durable)
        .expect("opening");
    store
        .append(&acked, Durability::Durable)
        .expect("acknowledged");
    std::mem::forget(store);
    std::mem::forget(owner);
    // Then the power goes.
    storage.crash(Tear::None, &mut SimRng::new(7));
    storage.restart();
    let owner = self::owner(&storage);
    let store = RuntimeEventStore::open(&owner, config);
    let ids: Vec<String> = store
        .read_session_runtime_events(S)
        .expect("read")
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert!(
        ids.contains(&"after-restart".to_owned()),
        "an acknowledged event was lost: {ids:?}"
    );
}

#[test]
fn closing_the_store_closes_every_session_even_when_one_fails() {
    use makalog::storage::{Fault, FaultKind, Storage};
    let sessions = ["close-a", "close-b", "close-c"];
    let mut failed_closes = 0;
    for k in 1..=30 {
        let storage = sim_root();
        let owner = owner(&storage);
        let store = RuntimeEventStore::open(&owner, WriterConfig::default());
        for s in sessions {
            store
                .append(&opening(s, "run-1", "turn-1", 1.0), Durability::Durable)
                .expect("opening");
        }
        storage.inject(Fault {
            nth: storage.operations() + k,
            forever: false,
            kind: FaultKind::Eio,
        });
        let closed = store.close();
        storage.clear_faults();
        let with_sidecar = sessions
            .iter()
            .filter(|s| {
                storage
                    .entry_kind(&std::path::Path::new("sessions").join(s).join("index"))
                    .is_ok_and(|e| e.is_some())
            })
            .count();
        if closed.is_err() {
            failed_closes += 1;
            assert!(
                with_sidecar >= sessions.len() - 1,
                "fault {k}: one failure left {} sessions unclosed",
                sessions.len() - with_sidecar
            );
        } else {
            assert_eq!(with_sidecar, sessions.len(), "fault {k}");
        }
    }
    assert!(failed_closes > 0, "some faults failed a close");
}
