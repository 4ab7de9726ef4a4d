//! The runtime's writes of a session's header (MAKA-MODEL §12 steps 5, 6 and 8: the
//! connection locked, the session running, then its last message and status) set their own
//! fields on the header the session holds when they are written: a host's update acknowledged
//! in between (a rename, a flag) stays.

mod support;

use makalog::runtime::{BackendRegistry, SessionManager, Sources, TurnInput};
use makalog::store::{open_execution_stores_for_write, ExecutionStores};
use serde_json::json;
use std::sync::{Arc, Mutex};

/// Who renames the session on the next id drawn: the stores and the session.
type Armed = Arc<Mutex<Option<(Arc<ExecutionStores>, String)>>>;

/// A host renaming (and flagging) `session` through the session store, and moving it to
/// another model for its later turns.
fn rename(stores: &ExecutionStores, session: &str) {
    let header = stores
        .sessions
        .read_session(session)
        .expect("read")
        .expect("the session");
    let mut next = header.value().clone();
    next["name"] = json!("Renamed by the host");
    next["isFlagged"] = json!(true);
    next["model"] = json!("other-model");
    stores
        .sessions
        .update_session(next)
        .expect("the host's update");
}

/// A turn's opening reads the session's header, then writes its admission and the open-runs
/// file (each synced) before the header records it builds from that read. A host's rename
/// acknowledged in between was overwritten by the opening's whole-header records, built from
/// the header read before it: here the rename lands on the first id the opening draws, after
/// its read of the header (every id of the turn is given, so none is drawn before).
#[tokio::test]
async fn a_hosts_rename_during_a_turns_opening_stays() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let armed: Armed = Arc::new(Mutex::new(None));
    let ids = Sources::system();
    let tick = std::sync::atomic::AtomicU64::new(1_780_000_000_000);
    let on_id = armed.clone();
    let sources = Sources::new(
        move || {
            if let Some((stores, session)) = on_id.lock().expect("armed").take() {
                rename(&stores, &session);
            }
            ids.new_id()
        },
        move || tick.fetch_add(1, std::sync::atomic::Ordering::SeqCst) as f64,
    );
    let manager = SessionManager::new(stores.clone(), BackendRegistry::with_fake(), sources)
        .expect("manager");
    let s = manager
        .create_session(json!({"id": "s", "cwd": "/work", "backend": "fake",
                               "llmConnectionSlug": "fake", "model": "fake-model"}))
        .expect("session")
        .id()
        .to_owned();
    *armed.lock().expect("arm") = Some((stores.clone(), s.clone()));
    let input = TurnInput {
        turn_id: Some("turn-1".into()),
        run_id: Some("run-1".into()),
        user_message_id: Some("message-1".into()),
        text: "hello".into(),
        execution: Some(json!({"kind": "external_message"})),
        ..TurnInput::default()
    };
    let turn = manager.send_message(&s, input).await.expect("send");
    let outcome = turn.finish().await.expect("the turn");
    assert_eq!(outcome.status, "completed");
    assert!(
        armed.lock().expect("armed").is_none(),
        "the host renamed it"
    );
    let header = stores.sessions.read_session(&s).expect("read").expect("s");
    let h = header.value();
    assert_eq!(h["name"], "Renamed by the host", "{h}");
    assert_eq!(h["isFlagged"], true);
    assert_eq!(h["connectionLocked"], true, "the opening's own field");
    assert_eq!(h["status"], "active", "the ending's own field");
    assert_eq!(h["hasUnread"], true);
    assert_eq!(
        h["model"], "other-model",
        "the host's model, for later turns"
    );
    // The turn itself runs on the model it read: its run and its assistant message agree.
    let run = stores.runs.read_run(&s, "run-1").expect("run");
    assert_eq!(run.value()["modelId"], "fake-model");
    let assistant: Vec<_> = stores
        .sessions
        .read_messages(&s, Some("turn-1"))
        .expect("messages")
        .into_iter()
        .filter(|m| m.message_type() == "assistant")
        .collect();
    assert!(!assistant.is_empty());
    for m in assistant {
        assert_eq!(m.value()["modelId"], "fake-model", "{}", m.value());
    }
}
