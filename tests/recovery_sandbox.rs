//! Recovery's failure class (MAKA-MODEL §12): `app_restarted`, or
//! `sandbox_boundary_closed_by_restart` when the restart closed a sandbox request, that is when
//! the run's events hold a `sandbox_escalation_requested` that no `sandbox_escalation_granted`,
//! `_denied` or `_failed` answered (such runs come from the original's ledgers, through the
//! importer). The class is the terminal event's content and failure class, the header's, the
//! `run_failed`'s and the turn's error class; a recovery cut short is finished with it, and a
//! second recovery writes nothing.

mod support;

use makalog::runtime::APP_RESTARTED;
use makalog::storage::Storage;
use makalog::store::ExecutionStores;
use serde_json::{json, Value};
use support::stores::{latest_turn_state, running_run, session_files, StoresRoot};

const CLOSED: &str = "sandbox_boundary_closed_by_restart";

/// A run of `s`, running, whose events are `events` in order.
fn run_with(stores: &ExecutionStores, s: &str, id: &str, events: &[&str]) {
    running_run(stores, s, id);
    for (i, kind) in events.iter().enumerate() {
        let event = json!({"type": kind, "id": format!("{id}-e{i}"), "runId": id,
                           "sessionId": s, "turnId": format!("turn-{id}"), "ts": 2 + i});
        stores.runs.append_event(event).expect("event");
    }
    stores
        .sessions
        .append_message(
            s,
            json!({"type": "turn_state", "id": format!("{id}-state"), "turnId": format!("turn-{id}"),
                   "ts": 2, "status": "running", "partialOutputRetained": false}),
        )
        .expect("turn_state");
}

/// Every place recovery states run `id`'s failure class holds `class`, and its reason is
/// `reason`.
fn ended_as(stores: &ExecutionStores, s: &str, id: &str, class: &str, reason: &str) {
    let header = stores.runs.read_run(s, id).expect("run");
    assert_eq!(
        (header.status(), &header.value()["failureClass"]),
        ("failed", &json!(class)),
        "{id}'s header"
    );
    assert!(
        header.value().get("failureMessage").is_none(),
        "recovery states no message"
    );
    let events = stores.runs.read_events(s, id).expect("events");
    let failed: Vec<&Value> = events
        .iter()
        .filter(|(_, e)| e.event_type() == "run_failed")
        .map(|(_, e)| &e.value()["data"])
        .collect();
    assert_eq!(failed.len(), 1, "{id}: one run_failed");
    assert_eq!(
        (&failed[0]["failureClass"], &failed[0]["recoveryReason"]),
        (&json!(class), &json!(reason)),
        "{id}'s run_failed"
    );
    let terminal: Vec<Value> = stores
        .runtime_events
        .read_immutable_runtime_events(s, id)
        .expect("runtime events")
        .into_iter()
        .filter(|e| e.is_terminal())
        .map(|e| e.value().clone())
        .collect();
    assert_eq!(terminal.len(), 1, "{id}: one terminal event");
    assert_eq!(
        terminal[0]["content"],
        json!({"kind": "error", "code": class, "reason": class, "message": class}),
        "{id}'s terminal event"
    );
    assert_eq!(
        terminal[0]["actions"]["stateDelta"]["failureClass"],
        json!(class)
    );
    let state = latest_turn_state(stores, s, Some(&format!("turn-{id}")));
    assert_eq!(
        (&state["status"], &state["errorClass"]),
        (&json!("failed"), &json!(class)),
        "{id}'s turn"
    );
}

#[test]
fn a_run_waiting_on_a_sandbox_request_is_failed_as_the_restart_closing_it() {
    let s = "sandboxed";
    let r = StoresRoot::with_session(s);
    let stores = &r.stores;
    run_with(
        stores,
        s,
        "r-open",
        &["run_started", "sandbox_escalation_requested"],
    );
    // A request still open when the tool it asked for started.
    run_with(
        stores,
        s,
        "r-tool",
        &[
            "run_started",
            "sandbox_escalation_requested",
            "tool_started",
        ],
    );
    // Requests answered before the crash: no request is closed by the restart.
    run_with(
        stores,
        s,
        "r-granted",
        &[
            "run_started",
            "sandbox_escalation_requested",
            "sandbox_escalation_granted",
            "sandbox_escalation_applied",
            "tool_started",
        ],
    );
    run_with(
        stores,
        s,
        "r-denied",
        &[
            "sandbox_escalation_requested",
            "sandbox_escalation_denied",
            "run_status_changed",
        ],
    );
    run_with(
        stores,
        s,
        "r-failed",
        &["sandbox_escalation_requested", "sandbox_escalation_failed"],
    );
    // A second request after an answered one is open.
    run_with(
        stores,
        s,
        "r-again",
        &[
            "sandbox_escalation_requested",
            "sandbox_escalation_granted",
            "sandbox_escalation_requested",
        ],
    );

    let m = r.manager();
    let report = m.recover_interrupted_sessions().expect("recover");
    let mut classes: Vec<(&str, &str, Option<&str>)> = report
        .recovered
        .iter()
        .map(|r| {
            (
                r.run_id.as_str(),
                r.status.as_str(),
                r.failure_class.as_deref(),
            )
        })
        .collect();
    classes.sort();
    let want = [
        ("r-again", Some(CLOSED)),
        ("r-denied", Some(APP_RESTARTED)),
        ("r-failed", Some(APP_RESTARTED)),
        ("r-granted", Some(APP_RESTARTED)),
        ("r-open", Some(CLOSED)),
        ("r-tool", Some(CLOSED)),
    ];
    assert_eq!(classes, want.map(|(id, c)| (id, "failed", c)), "the report");
    ended_as(stores, s, "r-open", CLOSED, "run_interrupted");
    ended_as(stores, s, "r-tool", CLOSED, "tool_interrupted");
    ended_as(stores, s, "r-granted", APP_RESTARTED, "tool_interrupted");
    ended_as(stores, s, "r-denied", APP_RESTARTED, "run_interrupted");
    ended_as(stores, s, "r-failed", APP_RESTARTED, "run_interrupted");
    ended_as(stores, s, "r-again", CLOSED, "run_interrupted");

    let root = r.storage.describe_root();
    let before = session_files(&root, s);
    let again = m.recover_interrupted_sessions().expect("again");
    assert!(again.recovered.is_empty(), "{:?}", again.recovered);
    assert_eq!(session_files(&root, s), before, "the second wrote nothing");
}

/// A recovery killed after its `run_failed` (the turn's state and the session's status lost)
/// is finished by the next, with the class it had chosen.
#[test]
fn a_cut_recovery_of_a_sandbox_wait_is_finished_with_its_class() {
    let s = "cut";
    let r = StoresRoot::with_session(s);
    let stores = &r.stores;
    run_with(
        stores,
        s,
        "r1",
        &["run_started", "sandbox_escalation_requested"],
    );
    let data = json!({"recovered": true, "recoveryReason": "run_interrupted",
                      "lastEventType": "sandbox_escalation_requested"});
    let mut delta = data.as_object().expect("object").clone();
    delta.insert("failureClass".into(), json!(CLOSED));
    let synthetic = makalog::event::RuntimeEvent::from_value(json!({
        "id": "recovery-r1", "invocationId": "r1", "runId": "r1", "sessionId": s,
        "turnId": "turn-r1", "ts": 9, "partial": false, "role": "system", "author": "system",
        "status": "failed",
        "content": {"kind": "error", "code": CLOSED, "reason": CLOSED, "message": CLOSED},
        "actions": {"endInvocation": true, "stateDelta": delta}
    }))
    .expect("event");
    stores
        .runs
        .commit_terminal(s, "r1", &synthetic, data.as_object().cloned())
        .expect("the commit's first steps");

    let m = r.manager();
    let report = m.recover_interrupted_sessions().expect("recover");
    let ended: Vec<(&str, &str)> = report
        .recovered
        .iter()
        .map(|r| (r.run_id.as_str(), r.recovery_reason.as_str()))
        .collect();
    assert_eq!(ended, [("r1", "run_interrupted")]);
    ended_as(stores, s, "r1", CLOSED, "run_interrupted");
    let again = m.recover_interrupted_sessions().expect("again");
    assert!(again.recovered.is_empty(), "{:?}", again.recovered);
}
