//! A backend that aborts its turn on its own (MAKA-MODEL §11: `abort {reason: user_stop,
//! redirect, timeout or crash}` → aborted, with `abortSource`): nobody asked the runtime to
//! stop, so the source is the backend's reason, in the terminal event's state, the run and the
//! turn's `turn_state`, never a stop button nobody pressed. A stop the runtime asked for keeps
//! its own source.

mod support;

use makalog::runtime::{Backend, BackendRegistry, SendInput, SessionEvent, SessionManager};
use makalog::store::open_execution_stores_for_write;
use serde_json::{json, Value};
use std::sync::Arc;
use support::turns::{text, ticking_sources};

/// Streams a delta, then aborts with its reason.
struct Aborting(&'static str);

impl Backend for Aborting {
    fn kind(&self) -> &str {
        "aborting"
    }
    fn send(&self, input: SendInput) -> tokio::sync::mpsc::Receiver<SessionEvent> {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let turn_id = input.turn_id;
        let events = [
            SessionEvent::TextDelta {
                id: format!("d-{turn_id}"),
                turn_id: turn_id.clone(),
                ts: 1.0,
                message_id: format!("m-{turn_id}"),
                text: "partly".into(),
            },
            SessionEvent::Abort {
                id: format!("a-{turn_id}"),
                turn_id: turn_id.clone(),
                ts: 2.0,
                reason: self.0.into(),
            },
        ];
        tokio::spawn(async move {
            for e in events {
                let _ = tx.send(e).await;
            }
        });
        rx
    }
    fn stop(&self) {}
}

/// What the ledger says of the session's one run: its status and abort source, its terminal
/// event's state delta, and its turn's latest `turn_state`.
fn ended(manager: &SessionManager, session: &str) -> (Value, Value, Value, Value) {
    let stores = manager.stores();
    let runs = stores.runs.list_session_runs(session).expect("runs");
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    let terminal: Vec<Value> = stores
        .runtime_events
        .read_immutable_runtime_events(session, run.run_id())
        .expect("events")
        .into_iter()
        .filter(|e| !e.partial() && e.is_terminal())
        .map(|e| e.value().clone())
        .collect();
    assert_eq!(terminal.len(), 1, "one terminal event");
    let state = stores
        .sessions
        .read_messages(session, None)
        .expect("messages")
        .into_iter()
        .rev()
        .find(|m| m.message_type() == "turn_state")
        .expect("a turn_state")
        .value()
        .clone();
    (
        json!(run.status()),
        run.value()["abortSource"].clone(),
        terminal[0]["actions"]["stateDelta"].clone(),
        state,
    )
}

#[tokio::test(start_paused = true)]
async fn a_backend_abort_is_recorded_with_the_backends_reason() {
    for reason in ["timeout", "crash", "redirect"] {
        let (_t, storage) = support::temp_root();
        let owner = support::owner(&storage);
        let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
        let mut registry = BackendRegistry::with_fake();
        registry.register("ai-sdk", move |_| Arc::new(Aborting(reason)));
        let manager = SessionManager::new(stores, registry, ticking_sources()).expect("manager");
        manager
            .create_session(json!({"id": "s", "backend": "ai-sdk", "model": "m"}))
            .expect("session");
        let turn = manager.send_message("s", text("go")).await.expect("send");
        let outcome = turn.finish().await.expect("the turn ends");
        assert_eq!(outcome.status, "cancelled", "{reason}");
        let (status, source, delta, state) = ended(&manager, "s");
        assert_eq!(
            (status, source),
            (json!("cancelled"), json!(reason)),
            "{reason}: the run"
        );
        assert_eq!(
            (&delta["abortSource"], &delta["stopReason"]),
            (&json!(reason), &json!(reason)),
            "{reason}: the terminal event"
        );
        assert_eq!(
            (&state["status"], &state["abortSource"]),
            (&json!("aborted"), &json!(reason)),
            "{reason}: the turn"
        );
    }
}
