//! A session header written through the ledger's raw layer, which does not hold it to the room
//! a host's header leaves for the runtime's fields (an older root, an import, a spawn claimed
//! through the claims log), may leave none: the runtime's end of a turn and recovery's end of
//! a run are then written whole, setting only the members that do not grow the header (the
//! session `active`), instead of being refused after their first records were queued; and no
//! later recovery takes the session for one with a run to end.

mod support;

use makalog::format::RecordKind;
use makalog::runtime::TurnInput;
use makalog::store::ExecutionStores;
use serde_json::json;
use std::sync::{Arc, Mutex};
use support::hooked::Hooked;

/// Writes `session`'s header padded to 10 bytes under the record bound, through the raw layer;
/// its canonical JSON.
fn fill_header(stores: &ExecutionStores, session: &str) -> String {
    let header = stores.sessions.read_session(session).expect("read");
    let header = header.expect("the session");
    let mut next = header.value().clone();
    // Without its times, so that the runtime's setting them grows it.
    for key in ["lastMessageAt", "statusUpdatedAt"] {
        next.as_object_mut().expect("object").remove(key);
    }
    let now = makalog::model::SessionHeader::from_value(next.clone()).expect("header");
    let len = serde_json::to_string(&next["name"]).expect("name").len();
    let bound = makalog::format::DEFAULT_MAX_PAYLOAD as usize;
    next["name"] = json!("n".repeat(bound - 10 - (now.canonical_json().len() - len) - 2));
    let full = makalog::model::SessionHeader::from_value(next).expect("header");
    stores
        .runtime_events
        .append_record(
            session,
            RecordKind::SessionHeader,
            full.canonical_json().as_bytes(),
        )
        .expect("the raw header");
    full.canonical_json().to_owned()
}

#[tokio::test]
async fn a_turn_ends_whole_on_a_header_that_leaves_no_room() {
    let (t, storage) = support::temp_root();
    let hooked = Hooked::new(&storage);
    let stores = hooked.stores.clone();
    let written = Arc::new(Mutex::new(None));
    let input = TurnInput {
        turn_id: Some("turn-1".into()),
        run_id: Some("run-1".into()),
        text: "hello".into(),
        ..TurnInput::default()
    };
    let turn = hooked.manager.send_message("s", input).await.expect("send");
    // The opening is written: the header fills up while the turn streams.
    let (host, full) = (stores.clone(), written.clone());
    hooked.arm(move || *full.lock().expect("full") = Some(fill_header(&host, "s")));
    let outcome = turn.finish().await.expect("the turn ends");
    assert_eq!(outcome.status, "completed");
    let full = written
        .lock()
        .expect("full")
        .take()
        .expect("the header filled");
    let header = stores.sessions.read_session("s").expect("read").expect("s");
    only_active(header.canonical_json(), &full);
    let kinds: Vec<String> = stores
        .runs
        .read_events("s", "run-1")
        .expect("events")
        .iter()
        .map(|(_, e)| e.event_type().to_owned())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| *k == "run_completed").count(),
        1,
        "{kinds:?}"
    );
    let states: Vec<String> = stores
        .sessions
        .read_messages("s", Some("turn-1"))
        .expect("messages")
        .iter()
        .filter(|m| m.message_type() == "turn_state")
        .map(|m| m.value()["status"].as_str().expect("status").to_owned())
        .collect();
    assert_eq!(states, ["running", "completed"], "one final turn_state");
    drop((hooked, stores));
    nothing_to_recover(t.path());
}

/// A run interrupted while its header leaves no room is ended by recovery whole (its terminal
/// event, header, `run_failed` and `turn_state`), the session's header kept as it is, and a
/// second recovery writes nothing.
#[tokio::test]
async fn recovery_ends_a_run_whole_on_a_header_that_leaves_no_room() {
    let (t, storage) = support::temp_root();
    let hooked = Hooked::new(&storage);
    let input = TurnInput {
        run_id: Some("run-1".into()),
        ..support::turns::text(makalog::runtime::FAKE_ASK_USER_QUESTION_PROMPT)
    };
    let mut turn = hooked.manager.send_message("s", input).await.expect("send");
    support::turns::events_until(&mut turn, "user_question_request").await;
    turn.abandon().await;
    let full = fill_header(&hooked.stores, "s");
    drop(hooked);
    let (copy, restarted) = support::scripted::recovered_copy(t.path());
    let stores = restarted.stores();
    let run = stores.runs.read_run("s", "run-1").expect("run");
    assert_eq!(run.status(), "failed");
    assert_eq!(run.value()["failureClass"], "app_restarted");
    let header = stores.sessions.read_session("s").expect("read").expect("s");
    only_active(header.canonical_json(), &full);
    drop(restarted);
    nothing_to_recover(copy.path());
}

/// A later start finds nothing to end in the root under `dir`, even visiting every session
/// (its open-runs file gone): a session left `running` was taken for one with a run to end.
fn nothing_to_recover(dir: &std::path::Path) {
    let (copy, restarted) = support::scripted::recovered_copy(dir);
    std::fs::remove_file(copy.path().join("root").join("open-runs")).expect("open-runs");
    let again = restarted.recover_interrupted_sessions().expect("again");
    assert!(again.scanned_all, "every session visited");
    assert!(again.recovered.is_empty(), "{:?}", again.recovered);
    assert!(
        again.skipped.is_empty(),
        "nothing left to end: {:?}",
        again.skipped
    );
}

/// The header read back is the full one written but for its status, now `active`, and its
/// unread flag (the members that do not grow it); none added (the members that differ are
/// named, not the 4 MiB texts printed).
fn only_active(read: &str, full: &str) {
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(read).expect("json"),
        serde_json::from_str(full).expect("json"),
    );
    let (a, b) = (
        a.as_object().expect("object"),
        b.as_object().expect("object"),
    );
    let differ: Vec<String> = a
        .iter()
        .filter(|(k, v)| b.get(k.as_str()) != Some(*v))
        .map(|(k, v)| format!("{k}: {v:.80}"))
        .collect();
    assert_eq!(a.len(), b.len(), "no member added: {differ:?}");
    assert_eq!(a["status"], "active", "{differ:?}");
    assert!(
        differ
            .iter()
            .all(|d| d.starts_with("status:") || d.starts_with("hasUnread:")),
        "only the members that do not grow it: {differ:?}"
    );
}
