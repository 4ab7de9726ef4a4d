//! Run headers and run events (MAKA-MODEL §7): fields by name, the updates and status
//! transitions a run allows, unknown event types kept readable.

use makalog::model::{transition_allowed, RunEvent, RunHeader, RUN_STATUSES};
use makalog::Error;
use serde_json::{json, Value};

fn run() -> Value {
    json!({
        "runId": "run-1",
        "sessionId": "session-1",
        "turnId": "turn-1",
        "llmConnectionSlug": "fake",
        "modelId": "fake-model",
        "cwd": "/work",
        "status": "created",
        "backendKind": "fake",
        "permissionMode": "ask",
        "createdAt": 10,
        "updatedAt": 10
    })
}

fn field_of<T: std::fmt::Debug>(r: makalog::Result<T>) -> (String, String) {
    match r {
        Err(Error::InvalidRecord { record, field, .. }) => (record.to_owned(), field),
        other => panic!("expected a refusal naming a field, got {other:?}"),
    }
}

#[test]
fn a_run_header_needs_each_required_field_and_checks_each_value() {
    let header = RunHeader::from_value(run()).expect("valid");
    assert_eq!(
        (header.run_id(), header.session_id(), header.status()),
        ("run-1", "session-1", "created")
    );
    assert!(!header.is_terminal());
    assert_eq!(
        RunHeader::decode(header.canonical_json()).expect("canonical"),
        header
    );
    for key in run().as_object().expect("object").keys() {
        let mut r = run();
        r.as_object_mut().expect("object").remove(key);
        assert_eq!(
            field_of(RunHeader::from_value(r)),
            ("run header".into(), key.clone())
        );
    }
    let cases: Vec<(&str, Value, &str)> = vec![
        ("runId", json!("run 1"), "runId"),
        ("status", json!("paused"), "status"),
        ("backendKind", json!("other"), "backendKind"),
        ("invocationId", json!("inv-9"), "invocationId"),
        ("rootExecutionKind", json!("other"), "rootExecutionKind"),
        // The configuration's enums (§1.3): any other string was taken.
        ("toolMode", json!("bogus"), "toolMode"),
        ("orchestrationSource", json!("x"), "orchestrationSource"),
        (
            "agentSwarmAuthorization",
            json!("y"),
            "agentSwarmAuthorization",
        ),
        (
            "continuationSource",
            json!({"sourceInvocationId": "i", "sourceRunId": "r", "sourceTurnId": "t", "sourceRuntimeEventHighWater": -1}),
            "continuationSource.sourceRuntimeEventHighWater",
        ),
        (
            "continuationSource",
            json!({"sourceInvocationId": "i", "sourceRunId": "r", "sourceTurnId": "t", "sourceRuntimeEventHighWater": 3, "protocol": "continuation_source_v2"}),
            "continuationSource.claimId",
        ),
        ("surprise", json!(1), "surprise"),
    ];
    for (key, value, field) in cases {
        let mut r = run();
        r[key] = value;
        assert_eq!(field_of(RunHeader::from_value(r)).1, field, "{key}");
    }
    let mut two_origins = run();
    two_origins["scheduledTaskId"] = json!("task-1");
    two_origins["goalId"] = json!("goal-1");
    assert_eq!(field_of(RunHeader::from_value(two_origins)).1, "goalId");
    let mut same = run();
    same["invocationId"] = json!("run-1");
    RunHeader::from_value(same).expect("invocationId equal to runId");
    for (key, values) in [
        ("toolMode", &["direct", "code_mode"][..]),
        ("orchestrationSource", &["session", "turn_override"]),
        (
            "agentSwarmAuthorization",
            &["none", "session_mode", "turn_override"],
        ),
    ] {
        for value in values {
            let mut r = run();
            r[key] = json!(value);
            RunHeader::from_value(r).expect("a value §1.3 names");
        }
    }
}

#[test]
fn an_update_changes_only_what_section_7_allows() {
    let created = RunHeader::from_value(run()).expect("valid");
    let running = created
        .updated(&json!({"status": "running", "updatedAt": 11}))
        .expect("created -> running");
    assert_eq!(running.status(), "running");
    for key in ["turnId", "modelId", "cwd", "createdAt", "runId"] {
        let refused = created.updated(&json!({ key: "x" }));
        assert_eq!(
            field_of(refused),
            ("run update".into(), key.to_owned()),
            "{key}"
        );
    }
    let composed = running
        .updated(&json!({"runComposition": {"parts": 1}, "updatedAt": 12}))
        .expect("composition set once");
    composed
        .updated(&json!({"runComposition": {"parts": 1}}))
        .expect("the same composition again");
    assert_eq!(
        field_of(composed.updated(&json!({"runComposition": {"parts": 2}}))).1,
        "runComposition"
    );
    let failed = composed
        .updated(&json!({"status": "failed", "failureClass": "provider_error", "completedAt": 13}))
        .expect("running -> failed");
    assert!(failed.is_terminal());
    assert_eq!(failed.value()["failureClass"], json!("provider_error"));
    assert_eq!(
        field_of(failed.updated(&json!({"status": "running"}))).1,
        "status"
    );
    let cleared = failed
        .updated(&json!({"failureMessage": null}))
        .expect("an absent optional stays absent");
    assert_eq!(cleared.value().get("failureMessage"), None);
    assert_eq!(
        field_of(created.updated(&json!({"updatedAt": "later"}))),
        ("run header".into(), "updatedAt".into()),
        "the updated header is checked as any header"
    );
}

#[test]
fn status_transitions_never_leave_an_ended_run() {
    for &from in RUN_STATUSES {
        for &to in RUN_STATUSES {
            let allowed = transition_allowed(from, to);
            let expected = from == to
                || from == "created"
                || (matches!(from, "running" | "waiting_for_user") && to != "created");
            assert_eq!(allowed, expected, "{from} -> {to}");
        }
    }
}

fn event(kind: &str) -> Value {
    json!({"type": kind, "id": "e-1", "runId": "run-1", "sessionId": "session-1", "turnId": "turn-1", "ts": 3})
}

#[test]
fn run_events_of_any_type_stay_readable_and_terminals_are_known() {
    for kind in ["run_started", "tool_started", "a_type_from_a_newer_runtime"] {
        let e = RunEvent::from_value(event(kind)).expect(kind);
        assert_eq!(e.event_type(), kind);
        assert!(!e.is_terminal());
    }
    for kind in ["run_completed", "run_failed", "run_cancelled"] {
        assert!(RunEvent::from_value(event(kind)).expect(kind).is_terminal());
    }
    let mut with_data = event("run_failed");
    with_data["data"] = json!({"failureClass": "provider_error"});
    with_data["message"] = json!("it failed");
    assert_eq!(
        RunEvent::from_value(with_data).expect("data").run_id(),
        "run-1"
    );
    for (key, value, field) in [
        ("type", json!("  "), "type"),
        ("runId", json!("run/1"), "runId"),
        ("ts", json!("now"), "ts"),
        ("data", json!([1]), "data"),
        ("extra", json!(1), "extra"),
    ] {
        let mut e = event("run_started");
        e[key] = value;
        assert_eq!(
            field_of(RunEvent::from_value(e)),
            ("run event".into(), field.to_owned())
        );
    }
    for key in ["type", "id", "runId", "sessionId", "turnId", "ts"] {
        let mut e = event("run_started");
        e.as_object_mut().expect("object").remove(key);
        assert_eq!(field_of(RunEvent::from_value(e)).1, key);
    }
}
