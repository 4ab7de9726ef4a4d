//! The runtime's writes of a session's header (MAKA-MODEL §12 steps 5, 6 and 8: the
//! connection locked, the session running, then its last message and status) set their own
//! fields on the header the session holds when they are written: a host's update acknowledged
//! in between (a rename, a flag) stays.

mod support;

use makalog::runtime::TurnInput;
use makalog::store::ExecutionStores;
use serde_json::json;
use std::sync::{Arc, Mutex};
use support::hooked::Hooked;

/// The hosted turn each test runs: `turn-1`, `run-1`, user message `message-1`.
fn hosted_turn() -> TurnInput {
    TurnInput {
        turn_id: Some("turn-1".into()),
        run_id: Some("run-1".into()),
        user_message_id: Some("message-1".into()),
        text: "hello".into(),
        execution: Some(json!({"kind": "external_message"})),
        ..TurnInput::default()
    }
}

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
    let hooked = Hooked::new(&storage);
    let (stores, s) = (hooked.stores.clone(), "s".to_owned());
    let renamed = (stores.clone(), s.clone());
    hooked.arm(move || rename(&renamed.0, &renamed.1));
    let input = hosted_turn();
    let turn = hooked.manager.send_message(&s, input).await.expect("send");
    let outcome = turn.finish().await.expect("the turn");
    assert_eq!(outcome.status, "completed");
    assert!(hooked.fired(), "the host renamed it");
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

/// What a turn left when a host's update, landing during its opening, padded the session's
/// header to `gap` bytes under the record bound.
struct Padded {
    update: makalog::Result<makalog::model::SessionHeader>,
    status: String,
    run_events: Vec<String>,
    before: serde_json::Value,
    after: makalog::model::SessionHeader,
}

async fn a_turn_with_the_header_padded_to(gap: usize) -> Padded {
    let (_t, storage) = support::temp_root();
    let hooked = Hooked::new(&storage);
    let stores = hooked.stores.clone();
    let update = Arc::new(Mutex::new(None));
    let (host, seen) = (stores.clone(), update.clone());
    let before = stores.sessions.read_session("s").expect("read").expect("s");
    hooked.arm(move || {
        let header = host.sessions.read_session("s").expect("read");
        let header = header.expect("the session");
        let mut next = header.value().clone();
        let len = serde_json::to_string(&next["name"]).expect("name").len();
        let now = header.canonical_json().len();
        let bound = makalog::format::DEFAULT_MAX_PAYLOAD as usize;
        next["name"] = json!("n".repeat(bound - gap - (now - len) - 2));
        *seen.lock().expect("seen") = Some(host.sessions.update_session(next));
    });
    let s = "s";
    let input = hosted_turn();
    let turn = hooked.manager.send_message(s, input).await.expect("send");
    let outcome = turn.finish().await.expect("the turn");
    let run_events = stores
        .runs
        .read_events(s, "run-1")
        .expect("events")
        .iter()
        .map(|(_, e)| e.value()["type"].as_str().expect("type").to_owned())
        .collect();
    let update = update.lock().expect("seen").take();
    Padded {
        update: update.expect("the host updated"),
        status: outcome.status,
        run_events,
        before: before.value().clone(),
        after: stores.sessions.read_session(s).expect("read").expect("s"),
    }
}

/// The run's events of a turn that ran whole: created, started once, completed.
fn ran_whole(kinds: &[String]) {
    assert_eq!(kinds.first().map(String::as_str), Some("run_created"));
    assert_eq!(kinds.iter().filter(|k| *k == "run_started").count(), 1);
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("run_completed"),
        "{kinds:?}"
    );
}

/// A host's update that brought the header within a few bytes of the record bound was taken,
/// and the turn's opening then set its own fields on it at queue time: the header record grew
/// past the bound after the run, its `run_created` and the user's records were queued, so the
/// turn failed half-opened. A host's header now leaves room for every field the runtime sets;
/// the update is refused, nothing written, and the turn runs whole.
#[tokio::test]
async fn a_hosts_update_too_close_to_the_bound_is_refused_and_the_turn_runs_whole() {
    let padded = a_turn_with_the_header_padded_to(10).await;
    assert_eq!(padded.status, "completed");
    match padded.update {
        Err(makalog::Error::InvalidRecord { record, field, why }) => {
            assert_eq!((record, field.as_str()), ("session header", "<record>"));
            assert!(why.contains("the runtime"), "{why}");
        }
        other => panic!("the update near the bound is refused, got {other:?}"),
    }
    assert_eq!(
        padded.after.value()["name"],
        padded.before["name"],
        "nothing of it written"
    );
    ran_whole(&padded.run_events);
}

/// A host's header that leaves exactly the room is taken, and the runtime's fields set on it
/// (the connection locked, the session running, then its end) still fit.
#[tokio::test]
async fn a_hosts_header_that_leaves_the_room_is_taken_and_the_turn_runs_whole() {
    let padded = a_turn_with_the_header_padded_to(makalog::model::RUNTIME_FIELDS_ROOM).await;
    assert_eq!(padded.status, "completed");
    let taken = padded.update.expect("the update is taken");
    ran_whole(&padded.run_events);
    let after = padded.after.value();
    assert_eq!(
        after["name"],
        taken.value()["name"],
        "the host's name stays"
    );
    assert_eq!(after["connectionLocked"], true);
    assert_eq!(after["status"], "active");
    assert!(after.get("lastMessageAt").is_some() && after.get("statusUpdatedAt").is_some());
    assert!(padded.after.canonical_json().len() <= makalog::format::DEFAULT_MAX_PAYLOAD as usize);
}
