//! A backend that streams a script: a text delta, then what its script gives for the turn;
//! a holding one then keeps its stream open until it is stopped, as a backend waiting on the
//! user does.

use makalog::runtime::{Backend, BackendRegistry, SendInput, SessionEvent, SessionManager};
use makalog::store::open_execution_stores_for_write;
use serde_json::{json, Value};
use std::sync::Arc;

/// What a scripted backend streams after its delta, for a turn's id.
pub type Script = fn(&str) -> Vec<SessionEvent>;

/// Streams a delta, then what its script gives for the turn (and with `hold`, waits to be
/// stopped before it closes the stream).
pub struct Scripted {
    script: Script,
    hold: bool,
    stopped: Arc<tokio::sync::Notify>,
}

impl Backend for Scripted {
    fn kind(&self) -> &str {
        "scripted"
    }
    fn send(&self, input: SendInput) -> tokio::sync::mpsc::Receiver<SessionEvent> {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let turn_id = input.turn_id;
        let mut events = vec![SessionEvent::TextDelta {
            id: format!("d-{turn_id}"),
            turn_id: turn_id.clone(),
            ts: 1.0,
            message_id: format!("m-{turn_id}"),
            text: "partly".into(),
            start_offset: Some(0),
        }];
        events.extend((self.script)(&turn_id));
        let (hold, stopped) = (self.hold, self.stopped.clone());
        tokio::spawn(async move {
            for e in events {
                let _ = tx.send(e).await;
            }
            if hold {
                stopped.notified().await;
            }
        });
        rx
    }
    fn stop(&self) {
        self.stopped.notify_one();
    }
}

/// A manager whose `ai-sdk` backend follows `script`, over a new root with session `s`.
pub fn scripted(script: Script) -> (tempfile::TempDir, makalog::root::Owner, SessionManager) {
    with_backend(script, false)
}

/// [`scripted`], the backend keeping its stream open after the script until it is stopped.
pub fn scripted_holding(
    script: Script,
) -> (tempfile::TempDir, makalog::root::Owner, SessionManager) {
    with_backend(script, true)
}

fn with_backend(
    script: Script,
    hold: bool,
) -> (tempfile::TempDir, makalog::root::Owner, SessionManager) {
    let (t, storage) = super::temp_root();
    let owner = super::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let mut registry = BackendRegistry::with_fake();
    registry.register("ai-sdk", move |_| {
        Arc::new(Scripted {
            script,
            hold,
            stopped: Arc::default(),
        })
    });
    let manager =
        SessionManager::new(stores, registry, super::turns::ticking_sources()).expect("manager");
    manager
        .create_session(json!({"id": "s", "backend": "ai-sdk", "model": "m"}))
        .expect("session");
    (t, owner, manager)
}

/// A copy of the root under `dir` as its files are now (what a kill leaves, once the facts
/// the caller saw are durable), with a manager over it (the fake backend, the system's ids
/// and clock) that has run recovery at start.
pub fn recovered_copy(dir: &std::path::Path) -> (tempfile::TempDir, SessionManager) {
    let (copy, manager, _) = recovered_copy_reporting(dir);
    (copy, manager)
}

/// [`recovered_copy`], with what its recovery reported.
pub fn recovered_copy_reporting(
    dir: &std::path::Path,
) -> (
    tempfile::TempDir,
    SessionManager,
    makalog::runtime::RecoveryReport,
) {
    let killed = tempfile::tempdir().expect("tempdir");
    for (path, bytes) in super::snapshot(dir) {
        let to = killed.path().join(path);
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("mkdir");
        std::fs::write(to, bytes).expect("write");
    }
    let storage = Arc::new(makalog::storage::RealStorage::new(
        killed.path().join("root"),
    ));
    let owner = super::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let manager = SessionManager::new(
        stores,
        BackendRegistry::with_fake(),
        makalog::runtime::Sources::system(),
    )
    .expect("manager");
    let report = manager.recover_interrupted_sessions().expect("recover");
    (killed, manager, report)
}

/// What session `s` holds after its one run: the run's header, its immutable runtime events
/// (in sequence order) and the session's stored messages, all as JSON.
pub fn written(manager: &SessionManager) -> (Value, Vec<Value>, Vec<Value>) {
    let stores = manager.stores();
    let run = stores.runs.list_session_runs("s").expect("runs")[0].clone();
    let events = stores
        .runtime_events
        .read_immutable_runtime_events("s", run.run_id())
        .expect("events");
    let messages = stores.sessions.read_messages("s", None).expect("messages");
    (
        run.value().clone(),
        events.iter().map(|e| e.value().clone()).collect(),
        messages.iter().map(|m| m.value().clone()).collect(),
    )
}

/// Runs a turn of `s` ("go") to its end, which must be `completed`: its id, the events its
/// caller saw (as JSON) and its fact failures.
pub async fn one_turn(manager: &SessionManager) -> (String, Vec<Value>, usize) {
    let mut turn = manager
        .send_message("s", super::turns::text("go"))
        .await
        .expect("send");
    let mut seen = Vec::new();
    while let Some(e) = turn.events.recv().await {
        seen.push(serde_json::to_value(&e).expect("an event serializes"));
    }
    let outcome = turn.finish().await.expect("the turn ends");
    assert_eq!(outcome.status, "completed");
    (outcome.turn_id, seen, outcome.fact_failures)
}
