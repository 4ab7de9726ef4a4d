//! The runtime-event store: sealing, identity, sequence numbers and read orders, and reading
//! a session never written. Its invocation index: `runtime_event_invocations.rs`; concurrent
//! sessions, buffered limits, durability and closes: `runtime_event_durability.rs`; its index
//! sidecar: `runtime_event_sidecar.rs`.

mod support;

use makalog::segment::Durability;
use makalog::storage::Storage;
use makalog::Error;
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

/// An event too big for a record, for a session not yet written: refused before the session is
/// made (it made the session's directory and first segment, durably, then refused the event).
#[test]
fn an_event_too_big_for_a_record_is_refused_with_no_session_made() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    let root = storage.describe_root();
    let before = snapshot(&root);
    let big = text(
        "new-one",
        "run-1",
        "turn-1",
        "e1",
        1.0,
        &"x".repeat(5 << 20),
    );
    match store.append(&big, Durability::Durable) {
        Err(Error::InvalidInput(why)) => assert!(why.contains("bound"), "{why}"),
        other => panic!("a 5 MiB event: {other:?}"),
    }
    let after = snapshot(&root);
    assert!(
        after == before,
        "nothing written, no session made: {:?}",
        after.keys()
    );
}
