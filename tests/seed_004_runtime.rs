//! Seed 004 (runtime-invocation-index.test.ts) through the SessionManager: three turns written
//! by the runtime with a backend that only completes; the invocation index equals a rebuild
//! from the events alone and every invocation is completed; a straggler appended past sealing
//! by a raw writer (as a ledger from before sealing could hold); reopened, the index still
//! equals the rebuild and the first invocation is still completed.

mod support;

use makalog::index::runtime_invocations_from_session_events;
use makalog::runtime::{
    Backend, BackendRegistry, SendInput, SessionEvent, SessionManager, Sources, TurnInput,
};
use makalog::segment::{Durability, WriterConfig};
use makalog::storage::Storage;
use makalog::store::open_execution_stores_for_write;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// The seed's `ai-sdk` backend: one `complete{end_turn}` a turn.
struct Completes;

impl Backend for Completes {
    fn kind(&self) -> &str {
        "ai-sdk"
    }
    fn send(&self, input: SendInput) -> mpsc::Receiver<SessionEvent> {
        let (tx, rx) = mpsc::channel(1);
        let complete = SessionEvent::Complete {
            id: format!("{}-complete", input.turn_id),
            turn_id: input.turn_id,
            ts: 2.0,
            stop_reason: "end_turn".into(),
            context_budget_exhausted_detail: None,
        };
        tx.try_send(complete).expect("room for one event");
        rx
    }
    fn stop(&self) {}
}

#[tokio::test]
async fn the_invocation_index_returns_the_same_inventory_as_a_rebuild_from_events_alone() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let mut backends = BackendRegistry::default();
    backends.register("ai-sdk", |_| Arc::new(Completes));
    let ids = AtomicU64::new(0);
    let clock = Mutex::new(1_000.0);
    let sources = Sources::new(
        move || format!("index-{}", ids.fetch_add(1, Ordering::SeqCst) + 1),
        move || {
            let mut c = clock.lock().expect("clock");
            *c += 1.0;
            *c
        },
    );
    let manager = SessionManager::new(stores.clone(), backends, sources).expect("manager");
    let root = storage.describe_root().display().to_string();
    let session = manager
        .create_session(
            json!({"cwd": root, "llmConnectionSlug": "fake", "permissionMode": "bypass"}),
        )
        .expect("session");
    let session_id = session.id().to_owned();
    for turn_id in ["turn-1", "turn-2", "turn-3"] {
        let input = TurnInput {
            turn_id: Some(turn_id.into()),
            text: turn_id.into(),
            ..TurnInput::default()
        };
        // Drain the turn so its run reaches the durable ledger.
        let outcome = manager
            .send_message(&session_id, input)
            .await
            .expect("send")
            .finish()
            .await
            .expect("turn");
        assert_eq!(outcome.status, "completed");
    }

    let events = &stores.runtime_events;
    let invocations = events.list_session_invocations(&session_id).expect("list");
    let rebuilt = runtime_invocations_from_session_events(
        &session_id,
        &events
            .read_session_runtime_events(&session_id)
            .expect("read"),
    );
    assert_eq!(invocations.len(), 3);
    assert_eq!(
        invocations, rebuilt,
        "the index must return exactly what a rebuild from events alone produces"
    );
    for invocation in &invocations {
        assert_eq!(
            invocation
                .terminal_event
                .as_ref()
                .and_then(|t| t["status"].as_str()),
            Some("completed"),
            "a finished invocation must expose its terminal event through the index"
        );
    }

    // A ledger written before the store sealed runs can carry a straggler after the terminal
    // event; the index must read such a run as ended, as every other reader does.
    let straggler = invocations[0].clone();
    drop(manager);
    Arc::try_unwrap(stores)
        .ok()
        .expect("the only handle")
        .close()
        .expect("close");
    let event = makalog::event::RuntimeEvent::from_value(json!({
        "id": "post-terminal-straggler", "invocationId": straggler.invocation_id,
        "runId": straggler.run_id, "sessionId": session_id, "turnId": straggler.turn_id,
        "ts": 9_999, "partial": false, "role": "model", "author": "agent",
        "modelVisibility": "visible",
        "content": {"kind": "text", "text": "arrived after the run was sealed"}
    }))
    .expect("straggler");
    let (raw, _) =
        makalog::segment::SegmentWriter::open(&owner, &session_id, WriterConfig::default())
            .expect("raw writer");
    raw.append(
        makalog::format::RecordKind::RuntimeEvent,
        event.canonical_json().as_bytes(),
        Durability::Durable,
    )
    .expect("raw append");
    drop(raw);

    let reopened = open_execution_stores_for_write(&owner).expect("reopen");
    let after = reopened
        .runtime_events
        .list_session_invocations(&session_id)
        .expect("list");
    assert_eq!(
        after,
        runtime_invocations_from_session_events(
            &session_id,
            &reopened
                .runtime_events
                .read_session_runtime_events(&session_id)
                .expect("read")
        ),
        "the index and a rebuild must still agree once a straggler follows the terminal"
    );
    assert_eq!(
        after
            .iter()
            .find(|i| i.invocation_id == straggler.invocation_id)
            .and_then(|i| i.terminal_event.as_ref())
            .and_then(|t| t["status"].as_str()),
        Some("completed"),
        "a run that ended stays ended when an unsealed-era straggler follows it"
    );
    reopened.close().expect("close");
}
