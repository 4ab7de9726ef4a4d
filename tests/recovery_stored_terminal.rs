//! Recovery of a run whose terminal RuntimeEvent was stored before the crash (MAKA-MODEL §12:
//! it is kept): the rest of its end states what that event says, as the turn's own end would
//! have. An aborted one's `turn_state` carries when and why it was aborted; a failed one that
//! names no failure class is `unknown` in the run and in the turn alike, and one an error
//! failed carries the error's message; a turn states whether it kept output (a completed one
//! with an answer did, an aborted one with none did not); and the report gives the run's
//! status as its header does.

mod support;

use makalog::segment::Durability;
use makalog::store::ExecutionStores;
use serde_json::{json, Value};
use support::stores::{latest_turn_state, running_run, StoresRoot};

/// A running run of `s` whose terminal event (`fields` over the envelope) is stored, and
/// nothing after it.
fn ended_before_the_crash(stores: &ExecutionStores, s: &str, id: &str, fields: Value) {
    running_run(stores, s, id);
    let mut event = json!({"id": format!("{id}-end"), "invocationId": id, "runId": id,
        "sessionId": s, "turnId": format!("turn-{id}"), "ts": 7, "partial": false,
        "role": "system", "author": "system", "actions": {"endInvocation": true}});
    for (k, v) in fields.as_object().expect("object") {
        event[k] = v.clone();
    }
    let event = makalog::event::RuntimeEvent::from_value(event).expect("event");
    stores
        .runtime_events
        .append(&event, Durability::Durable)
        .expect("terminal event");
}

fn turn_state(stores: &ExecutionStores, s: &str, id: &str) -> Value {
    latest_turn_state(stores, s, Some(&format!("turn-{id}")))
}

#[test]
fn the_end_of_a_run_with_a_stored_terminal_states_what_that_terminal_says() {
    let s = "kept";
    let r = StoresRoot::with_session(s);
    let stores = &r.stores;
    ended_before_the_crash(
        stores,
        s,
        "r-aborted",
        json!({"status": "aborted",
               "actions": {"endInvocation": true,
                           "stateDelta": {"stopReason": "timeout", "abortSource": "timeout"}}}),
    );
    ended_before_the_crash(stores, s, "r-failed", json!({"status": "failed"}));
    ended_before_the_crash(stores, s, "r-done", json!({"status": "completed"}));
    stores
        .sessions
        .append_message(
            s,
            json!({"type": "assistant", "id": "said", "turnId": "turn-r-done", "ts": 6,
                   "text": "done", "modelId": "m"}),
        )
        .expect("its answer");
    ended_before_the_crash(
        stores,
        s,
        "r-error",
        json!({"status": "failed",
               "content": {"kind": "error", "message": "the provider refused", "code": "provider"},
               "actions": {"endInvocation": true, "stateDelta": {"failureClass": "provider"}}}),
    );

    let report = r.manager().recover_interrupted_sessions().expect("recover");
    let mut got: Vec<(&str, &str, &str, Option<&str>)> = report
        .recovered
        .iter()
        .map(|r| {
            (
                r.run_id.as_str(),
                r.recovery_reason.as_str(),
                r.status.as_str(),
                r.failure_class.as_deref(),
            )
        })
        .collect();
    got.sort();
    let kept = "runtime_event_terminal_fact";
    assert_eq!(
        got,
        [
            ("r-aborted", kept, "cancelled", None),
            ("r-done", kept, "completed", None),
            ("r-error", kept, "failed", Some("provider")),
            ("r-failed", kept, "failed", Some("unknown")),
        ],
        "the report says what the run headers say"
    );
    for (id, status) in [
        ("r-aborted", "cancelled"),
        ("r-done", "completed"),
        ("r-failed", "failed"),
    ] {
        assert_eq!(stores.runs.read_run(s, id).expect("run").status(), status);
    }
    let aborted = turn_state(stores, s, "r-aborted");
    assert_eq!(
        (
            &aborted["status"],
            &aborted["abortedAt"],
            &aborted["abortSource"]
        ),
        (&json!("aborted"), &json!(7), &json!("timeout")),
        "{aborted}"
    );
    let done = turn_state(stores, s, "r-done");
    assert_eq!(
        (&done["status"], &done["partialOutputRetained"]),
        (&json!("completed"), &json!(true))
    );
    assert_eq!(aborted["partialOutputRetained"], json!(false));
    let failed = turn_state(stores, s, "r-failed");
    let header = stores.runs.read_run(s, "r-failed").expect("run");
    assert_eq!(
        (&failed["status"], &failed["errorClass"]),
        (&json!("failed"), &header.value()["failureClass"]),
        "the turn's class is the run's: {failed}"
    );
    assert_eq!(header.value()["failureClass"], json!("unknown"));
    // The kept terminal of a turn an error failed states the error's message, as the turn's
    // own end would have.
    let error = stores.runs.read_run(s, "r-error").expect("run");
    assert_eq!(
        error.value()["failureMessage"],
        json!("the provider refused")
    );
    assert!(header.value().get("failureMessage").is_none());
}
