//! The runtime-event store under load and failure: concurrent appends across sessions,
//! buffered partials written out past their limit, a run sealed only by a durable terminal, a
//! segment a crash cut short made durable before use, and closes that go on past a failure.

mod support;

use makalog::index::{encode_sidecar, rebuild};
use makalog::segment::{Durability, WriterConfig};
use makalog::storage::Storage;
use makalog::store::RuntimeEventStore;
use std::sync::Arc;
use support::event_store::*;
use support::events::*;
use support::*;

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
