//! The runtime-event store's invocation index: equal to a rebuild from the events alone,
//! the first terminal kept, seed 004 at the store level, and the facts it reads from stored
//! JSON equal to the strict decoder's.

mod support;

use makalog::index::{encode_sidecar, rebuild, runtime_invocations_from_session_events};
use makalog::segment::{Durability, WriterConfig};
use support::event_store::*;
use support::events::*;
use support::*;

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
        // Seventeen digits, more than 2^53 in them: serde_json's default reader rounds such
        // a decimal twice and read this one as 1733000000000.0017, where the strict decoder
        // reads it exactly; a live append and a rebuild then disagreed.
        text(S, "r", "t", "y", 1_733_000_000_000.001_5, "fractional ms"),
        text(S, "r", "t", "z", 1_733_000_000_000.005_9, "fractional ms"),
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

/// An event nested as deep as the ledger takes (256 levels) is listed like any other: the
/// invocation index reads its terminal event back with the ledger's own reader, not one that
/// stops at 128 levels.
#[test]
fn a_terminal_event_nested_deep_is_listed_with_its_invocation() {
    let (_t, storage) = temp_root();
    let store = store(&storage);
    store
        .append(&opening(S, "run-1", "turn-1", 1.0), Durability::Durable)
        .expect("opening");
    let mut deep = terminal(S, "run-1", "turn-1", "end-1", 2.0, "completed")
        .value()
        .clone();
    let mut inner = serde_json::json!([]);
    for _ in 0..200 {
        inner = serde_json::json!([inner]);
    }
    deep["actions"]["stateDelta"]["n"] = inner;
    let deep = makalog::event::RuntimeEvent::from_value(deep).expect("the ledger takes it");
    store.append(&deep, Durability::Durable).expect("terminal");
    let listed = store.list_session_invocations(S).expect("listed");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].outcome(), Some("completed"));
    assert_eq!(listed[0].terminal_event.as_ref(), Some(deep.value()));
    store.close().expect("close");
    // Rebuilt from the log alone, the same.
    std::fs::remove_file(sidecar_path(&storage)).expect("no sidecar");
    let reopened = self::store(&storage);
    assert_eq!(
        reopened.list_session_invocations(S).expect("rebuilt"),
        listed
    );
    reopened.close().expect("close");
    let _ = std::fs::remove_file(sidecar_path(&storage));
    let index = rebuild(&*storage, S).expect("the index rebuilt read-only");
    let read = makalog::index::invocations_from_log(&*storage, &index).expect("read");
    assert_eq!(read, listed);
}
