//! Recovery at start interrupted inside its own end of a run (MAKA-MODEL §12): its writes go
//! in one sync, and a crash may keep a prefix of them: the terminal event, the run's header and
//! `run_failed` stored, the turn's `turn_state` and the session's status not. The next
//! recovery finishes that run's end, once, whatever the session's header says and whatever
//! other run is still unfinished or cut short, and a third writes nothing.

mod support;

use makalog::format::RecordKind;
use makalog::runtime::{BackendRegistry, SessionManager, Sources, APP_RESTARTED};
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use makalog::store::{open_execution_stores_for_write, ExecutionStores};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use support::stores::session_header;

/// A root holding session `s` (no run yet), its owner and its stores.
fn root_with(
    s: &str,
) -> (
    tempfile::TempDir,
    makalog::root::Owner,
    Arc<ExecutionStores>,
) {
    let (t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    stores
        .sessions
        .create(session_header(s, 1))
        .expect("session");
    (t, owner, stores)
}

/// Session `s`'s header says a turn runs.
fn set_running(stores: &ExecutionStores, s: &str) {
    let mut running = stores
        .sessions
        .read_session(s)
        .expect("read")
        .expect("header")
        .value()
        .clone();
    running["status"] = json!("running");
    stores.sessions.update_session(running).expect("running");
}

/// A run of `s` whose turn a crash interrupted after its opening: running, `run_started`,
/// and its turn's `turn_state` running.
fn interrupted(stores: &ExecutionStores, s: &str, id: &str) {
    support::stores::running_run(stores, s, id);
    stores
        .runs
        .append_event(
            json!({"type": "run_started", "id": format!("{id}-e0"), "runId": id,
                             "sessionId": s, "turnId": format!("turn-{id}"), "ts": 2}),
        )
        .expect("event");
    stores
        .sessions
        .append_message(
            s,
            json!({"type": "turn_state", "id": format!("{id}-state"), "turnId": format!("turn-{id}"),
                   "ts": 2, "status": "running", "partialOutputRetained": false}),
        )
        .expect("turn_state");
}

/// What a recovery of run `id` kept when it was killed after its `run_failed`: its synthetic
/// terminal event, the run's header and `run_failed`, as the terminal commit writes them.
fn recovery_cut_after_run_failed(stores: &ExecutionStores, s: &str, id: &str) {
    let extras: Map<String, Value> = recovery_data().as_object().expect("object").clone();
    stores
        .runs
        .commit_terminal(s, id, &synthetic(s, id), Some(extras))
        .expect("the commit's first steps");
}

/// The data of the recovery's ending of a run interrupted after `run_started`.
fn recovery_data() -> Value {
    json!({"recovered": true, "recoveryReason": "run_interrupted", "lastEventType": "run_started"})
}

/// The synthetic terminal event a recovery of run `id` writes.
fn synthetic(s: &str, id: &str) -> makalog::event::RuntimeEvent {
    let mut delta = recovery_data().as_object().expect("object").clone();
    delta.insert("failureClass".into(), json!(APP_RESTARTED));
    makalog::event::RuntimeEvent::from_value(json!({
        "id": format!("recovery-{id}"), "invocationId": id, "runId": id, "sessionId": s,
        "turnId": format!("turn-{id}"), "ts": 9, "partial": false, "role": "system",
        "author": "system", "status": "failed",
        "content": {"kind": "error", "code": APP_RESTARTED, "reason": APP_RESTARTED,
                    "message": APP_RESTARTED},
        "actions": {"endInvocation": true, "stateDelta": delta}
    }))
    .expect("event")
}

fn latest_turn_state(stores: &ExecutionStores, s: &str, id: &str) -> Value {
    support::stores::latest_turn_state(stores, s, Some(&format!("turn-{id}")))
}

/// Recovers twice: the first finishes `expected`'s ends (in that order), the second finds
/// nothing to do and writes nothing.
fn recover_twice(stores: &Arc<ExecutionStores>, s: &str, expected: &[&str]) {
    let manager = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_fake(),
        Sources::system(),
    )
    .expect("manager");
    let report = manager.recover_interrupted_sessions().expect("recover");
    let ended: Vec<&str> = report.recovered.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ended, expected, "{report:?}");
    for id in expected {
        let state = latest_turn_state(stores, s, id);
        assert_eq!(
            (state["status"].clone(), state["errorClass"].clone()),
            (json!("failed"), json!(APP_RESTARTED)),
            "run {id}'s turn ended as its run"
        );
        let events = stores.runs.read_events(s, id).expect("events");
        assert_eq!(events.iter().filter(|(_, e)| e.is_terminal()).count(), 1);
    }
    let header = stores
        .sessions
        .read_session(s)
        .expect("read")
        .expect("header");
    assert_eq!(header.value()["status"], json!("active"));
    let again = manager.recover_interrupted_sessions().expect("again");
    assert!(again.recovered.is_empty(), "{:?}", again.recovered);
}

/// The turn's opening was cut before the session's status said `running` (the header still
/// says `active`), and recovery was killed after `run_failed`: the turn's state said
/// `running` for good.
#[test]
fn a_recovery_cut_after_run_failed_is_finished_under_an_active_header() {
    let (_t, _owner, stores) = root_with("cut");
    let s = "cut";
    interrupted(&stores, s, "r1");
    recovery_cut_after_run_failed(&stores, s, "r1");
    recover_twice(&stores, s, &["r1"]);
}

/// Two interrupted runs; recovery was killed after the first one's `run_failed`. The next
/// recovery ended the second and left the first one's turn `running`.
#[test]
fn a_recovery_cut_after_run_failed_is_finished_beside_another_unfinished_run() {
    let (_t, _owner, stores) = root_with("two");
    let s = "two";
    interrupted(&stores, s, "r1");
    interrupted(&stores, s, "r2");
    set_running(&stores, s);
    recovery_cut_after_run_failed(&stores, s, "r1");
    recover_twice(&stores, s, &["r1", "r2"]);
}

/// Recovery was killed between the run's header and its `run_failed`: the run is both failed
/// (its header) and unfinished (no terminal run event). It is ended once, not once for each.
#[test]
fn a_recovery_cut_between_the_header_and_run_failed_is_finished_once() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let s = "between";
    let failed = {
        let stores = open_execution_stores_for_write(&owner).expect("stores");
        stores
            .sessions
            .create(session_header(s, 1))
            .expect("session");
        interrupted(&stores, s, "r1");
        stores
            .runtime_events
            .append(&synthetic(s, "r1"), Durability::Durable)
            .expect("terminal event");
        let mut header = stores.runs.read_run(s, "r1").expect("run").value().clone();
        header["status"] = json!("failed");
        header["failureClass"] = json!(APP_RESTARTED);
        header["completedAt"] = json!(9);
        header["updatedAt"] = json!(9);
        stores.close().expect("close");
        header
    };
    // The header recovery queued after its terminal event, and nothing after it.
    let (w, _) = SegmentWriter::open(&owner, s, WriterConfig::default()).expect("writer");
    w.append(
        RecordKind::Run,
        failed.to_string().as_bytes(),
        Durability::Durable,
    )
    .expect("append");
    drop(w);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    assert_eq!(
        stores
            .runs
            .list_unfinished_runs(s)
            .expect("unfinished")
            .len(),
        1
    );
    recover_twice(&stores, s, &["r1"]);
}

/// The header says a turn runs; one run's recovery was cut after its `run_failed`, and the
/// last run's own end was cut after its terminal commit (its `turn_state` lost). Both are
/// finished: the first did not hide the second.
#[test]
fn a_cut_recovery_does_not_hide_a_turn_end_cut_after_its_commit() {
    let (_t, _owner, stores) = root_with("both");
    let s = "both";
    interrupted(&stores, s, "r1");
    recovery_cut_after_run_failed(&stores, s, "r1");
    interrupted(&stores, s, "r2");
    set_running(&stores, s);
    let done = makalog::event::RuntimeEvent::from_value(json!({
        "id": "done-r2", "invocationId": "r2", "runId": "r2", "sessionId": s,
        "turnId": "turn-r2", "ts": 9, "partial": false, "role": "model", "author": "agent",
        "status": "completed", "content": {"kind": "text", "text": "done"},
        "actions": {"endInvocation": true}
    }))
    .expect("event");
    stores
        .runs
        .commit_terminal(s, "r2", &done, None)
        .expect("r2's commit");
    let manager = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_fake(),
        Sources::system(),
    )
    .expect("manager");
    let report = manager.recover_interrupted_sessions().expect("recover");
    let ended: Vec<&str> = report.recovered.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(
        ended,
        ["r2", "r1"],
        "the one only the header names first: {report:?}"
    );
    assert_eq!(
        latest_turn_state(&stores, s, "r1")["status"],
        json!("failed")
    );
    assert_eq!(
        latest_turn_state(&stores, s, "r2")["status"],
        json!("completed")
    );
    let header = stores
        .sessions
        .read_session(s)
        .expect("read")
        .expect("header");
    assert_eq!(header.value()["status"], json!("active"));
    let again = manager.recover_interrupted_sessions().expect("again");
    assert!(again.recovered.is_empty(), "{:?}", again.recovered);
}

/// The turn's `turn_state` the recovery writes carries the turn's lineage (MAKA-MODEL §12,
/// writes for an interrupted run, step 4), as its latest `turn_state` states it (here one an
/// import brought: makalog's own turns state none).
#[test]
fn recovery_states_the_turn_failed_with_its_lineage() {
    let (_t, _owner, stores) = root_with("lineage");
    let s = "lineage";
    interrupted(&stores, s, "r1");
    let lineage = json!({"parentTurnId": "turn-0", "retriedFromTurnId": "turn-00",
                         "regeneratedFromTurnId": "turn-000", "branchOfTurnId": "turn-b",
                         "parentSessionId": "parent"});
    let mut state = json!({"type": "turn_state", "id": "r1-state-2", "turnId": "turn-r1",
                           "ts": 3, "status": "running", "partialOutputRetained": false});
    for (k, v) in lineage.as_object().expect("object") {
        state[k] = v.clone();
    }
    stores
        .sessions
        .append_message(s, state)
        .expect("turn_state");
    set_running(&stores, s);
    recover_twice(&stores, s, &["r1"]);
    let ended = latest_turn_state(&stores, s, "r1");
    for (k, v) in lineage.as_object().expect("object") {
        assert_eq!(&ended[k], v, "{k} in {ended}");
    }
}
