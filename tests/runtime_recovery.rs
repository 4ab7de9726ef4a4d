//! Recovery at start (MAKA-MODEL §12): every interrupted run is ended failed with
//! `app_restarted` and the reason of the first matching rule, by a synthetic terminal event,
//! the header, one `run_failed`, the turn's `turn_state` and the session's status (which
//! sessions it visits is in `runtime_open_runs.rs`); a run whose
//! terminal event was stored keeps it; recovery interrupted (its terminal event written, the
//! rest not) and run again writes each step once; run twice, the second writes nothing. Also
//! the intent hashes of §9 against the model's derived vector.

mod support;

use makalog::runtime::{
    recovery_reason, stable_hash, AgentGraphRunnableIntent, BackendRegistry, SessionManager,
    Sources, APP_RESTARTED,
};
use makalog::segment::Durability;
use makalog::storage::Storage;
use makalog::store::{open_execution_stores_for_write, ExecutionStores};
use serde_json::{json, Value};
use std::sync::Arc;
use support::stores::{run_header, session_header};

fn run_event(session: &str, run: &str, i: usize, kind: &str) -> Value {
    json!({"type": kind, "id": format!("{run}-e{i}"), "runId": run, "sessionId": session,
           "turnId": format!("turn-{run}"), "ts": 2 + i})
}

/// A run of `s` left as a crash would: its header at `status`, then `events`.
fn interrupted(stores: &ExecutionStores, s: &str, id: &str, status: &str, events: &[&str]) {
    stores
        .runs
        .create_run(run_header(s, id, "created"))
        .expect("run");
    if status != "created" {
        stores
            .runs
            .update_run(s, id, &json!({"status": status, "updatedAt": 2}))
            .expect("status");
    }
    for (i, kind) in events.iter().enumerate() {
        stores
            .runs
            .append_event(run_event(s, id, i, kind))
            .expect("event");
    }
}

#[test]
fn the_rule_table_picks_the_first_matching_reason() {
    let cases = [
        (
            "running",
            Some("model_stream_completed"),
            false,
            "model_stream_completed_without_runtime_terminal",
        ),
        (
            "waiting_for_user",
            Some("model_stream_completed"),
            true,
            "stale_user_wait",
        ),
        (
            "running",
            Some("permission_requested"),
            false,
            "stale_user_wait",
        ),
        (
            "completed",
            Some("permission_failed"),
            false,
            "stale_user_wait",
        ),
        ("running", Some("tool_started"), false, "tool_interrupted"),
        ("running", Some("plan_submitted"), false, "run_interrupted"),
        ("failed", None, false, "run_interrupted"),
        (
            "failed",
            Some("run_status_changed"),
            false,
            "run_interrupted",
        ),
        (
            "failed",
            Some("plan_submitted"),
            false,
            "non_terminal_run_recovered",
        ),
    ];
    for (status, last, terminal, want) in cases {
        assert_eq!(
            recovery_reason(status, last, terminal),
            want,
            "{status} {last:?}"
        );
    }
}

#[test]
fn every_interrupted_run_is_ended_once_and_a_second_recovery_writes_nothing() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let s = "crashed";
    let mut header = session_header(s, 1);
    header["status"] = json!("running");
    stores.sessions.create(header).expect("session");
    interrupted(&stores, s, "r-created", "created", &[]);
    interrupted(
        &stores,
        s,
        "r-tool",
        "running",
        &["run_started", "tool_started"],
    );
    interrupted(
        &stores,
        s,
        "r-wait",
        "waiting_for_user",
        &["run_started", "run_status_changed"],
    );
    interrupted(
        &stores,
        s,
        "r-stream",
        "running",
        &["run_started", "model_stream_completed"],
    );
    // A run whose terminal event reached the ledger before the crash keeps it.
    interrupted(&stores, s, "r-ended", "running", &["run_started"]);
    let done = makalog::event::RuntimeEvent::from_value(json!({
        "id": "r-ended-end", "invocationId": "r-ended", "runId": "r-ended", "sessionId": s,
        "turnId": "turn-r-ended", "ts": 5, "partial": false, "role": "system", "author": "system",
        "status": "completed", "actions": {"endInvocation": true}
    }))
    .expect("terminal");
    stores
        .runtime_events
        .append(&done, Durability::Durable)
        .expect("append");
    // A finished run is left alone.
    interrupted(
        &stores,
        s,
        "r-done",
        "running",
        &["run_started", "run_completed"],
    );
    let manager = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_fake(),
        Sources::system(),
    )
    .expect("manager");

    let report = manager.recover_interrupted_sessions().expect("recover");
    let mut reasons: Vec<(String, String)> = report
        .recovered
        .iter()
        .map(|r| (r.run_id.clone(), r.recovery_reason.clone()))
        .collect();
    reasons.sort();
    let want = [
        ("r-created", "run_interrupted"),
        ("r-ended", "runtime_event_terminal_fact"),
        (
            "r-stream",
            "model_stream_completed_without_runtime_terminal",
        ),
        ("r-tool", "tool_interrupted"),
        ("r-wait", "stale_user_wait"),
    ];
    assert_eq!(reasons, want.map(|(a, b)| (a.to_owned(), b.to_owned())));
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);

    for (id, reason) in want.iter().filter(|(id, _)| *id != "r-ended") {
        let header = stores.runs.read_run(s, id).expect("run");
        assert_eq!(header.status(), "failed", "{id}");
        assert_eq!(header.value()["failureClass"], json!(APP_RESTARTED));
        let events = stores.runs.read_events(s, id).expect("events");
        let failed: Vec<_> = events
            .iter()
            .filter(|(_, e)| e.event_type() == "run_failed")
            .collect();
        assert_eq!(failed.len(), 1, "{id}: one run_failed");
        let data = &failed[0].1.value()["data"];
        assert_eq!(
            (data["recovered"].clone(), data["recoveryReason"].clone()),
            (json!(true), json!(reason))
        );
        let terminal: Vec<_> = stores
            .runtime_events
            .read_immutable_runtime_events(s, id)
            .expect("runtime events")
            .into_iter()
            .filter(|e| e.is_terminal())
            .collect();
        assert_eq!(terminal.len(), 1, "{id}: one terminal event");
        let t = terminal[0].value();
        assert_eq!(
            t["content"],
            json!({"kind": "error", "code": APP_RESTARTED, "reason": APP_RESTARTED, "message": APP_RESTARTED})
        );
        assert_eq!(t["actions"]["stateDelta"]["recoveryReason"], json!(reason));
        let states = stores
            .sessions
            .read_messages(s, Some(&format!("turn-{id}")))
            .expect("messages");
        let state = states
            .iter()
            .find(|m| m.message_type() == "turn_state")
            .expect("turn_state");
        assert_eq!(
            (
                state.value()["status"].clone(),
                state.value()["errorClass"].clone()
            ),
            (json!("failed"), json!(APP_RESTARTED))
        );
    }
    let ended = stores.runs.read_run(s, "r-ended").expect("run");
    assert_eq!(
        ended.status(),
        "completed",
        "the stored terminal fact decides"
    );
    assert_eq!(
        stores.runs.read_run(s, "r-done").expect("run").status(),
        "running",
        "left alone"
    );
    let header = stores
        .sessions
        .read_session(s)
        .expect("read")
        .expect("header");
    assert_eq!(header.value()["status"], json!("active"));

    let root = storage.describe_root();
    let before = support::stores::session_files(&root, s);
    let again = manager.recover_interrupted_sessions().expect("again");
    assert!(again.recovered.is_empty(), "{:?}", again.recovered);
    assert_eq!(
        support::stores::session_files(&root, s),
        before,
        "the second recovery wrote nothing"
    );
}

#[test]
fn a_recovery_interrupted_after_its_terminal_event_finishes_with_that_event() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let s = "half";
    stores
        .sessions
        .create(session_header(s, 1))
        .expect("session");
    interrupted(&stores, s, "r1", "running", &["run_started"]);
    // What a first recovery wrote before it was killed: only its synthetic terminal event.
    let synthetic = makalog::event::RuntimeEvent::from_value(json!({
        "id": "recovery-1", "invocationId": "r1", "runId": "r1", "sessionId": s,
        "turnId": "turn-r1", "ts": 9, "partial": false, "role": "system", "author": "system",
        "status": "failed",
        "content": {"kind": "error", "code": APP_RESTARTED, "reason": APP_RESTARTED, "message": APP_RESTARTED},
        "actions": {"endInvocation": true, "stateDelta": {"recovered": true,
            "recoveryReason": "run_interrupted", "lastEventType": "run_started", "failureClass": APP_RESTARTED}}
    }))
    .expect("event");
    stores
        .runtime_events
        .append(&synthetic, Durability::Durable)
        .expect("append");
    let manager = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_fake(),
        Sources::system(),
    )
    .expect("manager");
    let report = manager.recover_interrupted_sessions().expect("recover");
    let reasons: Vec<&str> = report
        .recovered
        .iter()
        .map(|r| r.recovery_reason.as_str())
        .collect();
    assert_eq!(reasons, ["run_interrupted"], "the first recovery's reason");
    let run = stores.runs.read_run(s, "r1").expect("run");
    assert_eq!(
        (run.status(), run.value()["failureClass"].clone()),
        ("failed", json!(APP_RESTARTED))
    );
    let events = stores.runs.read_events(s, "r1").expect("events");
    assert_eq!(events.iter().filter(|(_, e)| e.is_terminal()).count(), 1);
    // The run_failed an uninterrupted recovery writes: its data as the event's state delta.
    let failed = events
        .iter()
        .find(|(_, e)| e.event_type() == "run_failed")
        .expect("run_failed");
    assert_eq!(
        failed.1.value()["data"],
        json!({"failureClass": APP_RESTARTED, "recovered": true,
               "recoveryReason": "run_interrupted", "lastEventType": "run_started"})
    );
    let terminals = stores
        .runtime_events
        .read_immutable_runtime_events(s, "r1")
        .expect("read")
        .into_iter()
        .filter(|e| e.is_terminal())
        .map(|e| e.id().to_owned())
        .collect::<Vec<_>>();
    assert_eq!(
        terminals,
        ["recovery-1"],
        "the first recovery's event, and no second"
    );
}

#[test]
fn the_intent_hashes_match_the_models_derived_vector() {
    let intent = AgentGraphRunnableIntent {
        schema_version: 1,
        intent_id: format!("graph_intent_{}", "a".repeat(32)),
        graph_id: "graph-1".into(),
        readiness_context_fingerprint: format!("sha256:{}", "b".repeat(64)),
        policy_fingerprint: format!("sha256:{}", "c".repeat(64)),
        readiness_id: "readiness-1".into(),
        operator_id: "summarizer".into(),
        target_session_id: "session-child".into(),
        policy_kind: "map".into(),
        trigger_route_ids: vec!["route-1".into()],
        trigger_record_ids: vec!["record-1".into()],
    };
    assert_eq!(
        intent
            .fingerprint("summarize the committed record")
            .expect("fingerprint"),
        "sha256:ef673becf809d633c8b6b62ab18e687ddd4111fa99f3f1790cfd800c8bc14f4c"
    );
    assert_eq!(
        makalog::runtime::claim_id_of("graph-1", &intent.intent_id),
        "graph_claim_560a2ab303ce76280aacf223e939f74b"
    );
    assert!(
        intent.fingerprint("   ").is_err(),
        "a blank prompt is refused"
    );
    assert_eq!(
        stable_hash(&json!({"b": 1, "a": [2]})),
        stable_hash(&json!({"a": [2], "b": 1}))
    );
    assert!(intent.derived_id().starts_with("graph_intent_") && intent.derived_id().len() == 45);
}

/// Recovery finishes only a turn's end a crash cut short, which stored its terminal
/// RuntimeEvent first: a session whose header says `running` for another reason (a host set
/// it, or an import copied it) and whose last run was ended without one is not given a made-up
/// failure.
#[test]
fn a_running_header_over_runs_ended_without_a_terminal_event_is_left_as_it_is() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let s = "hosted";
    let mut header = session_header(s, 1);
    header["status"] = json!("running");
    stores.sessions.create(header).expect("session");
    interrupted(
        &stores,
        s,
        "r-1",
        "running",
        &["run_started", "run_completed"],
    );
    assert!(stores
        .runs
        .list_unfinished_runs(s)
        .expect("runs")
        .is_empty());
    let manager = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_fake(),
        Sources::system(),
    )
    .expect("manager");
    let report = manager.recover_interrupted_sessions().expect("recover");
    assert!(report.recovered.is_empty(), "{report:?}");
    assert!(report.skipped.is_empty(), "{report:?}");
    let events = stores
        .runtime_events
        .read_immutable_runtime_events(s, "r-1")
        .expect("events");
    assert!(events.is_empty(), "no terminal event made up");
    assert_eq!(
        stores.runs.read_run(s, "r-1").expect("run").status(),
        "running"
    );
}

/// §12: continuation-owned runs are skipped. A run that continues another (its header's
/// `continuationSource`) is left as it is, reported, and kept named in the open-runs file; the
/// session's other interrupted run is ended, and a second start skips the same run again.
#[test]
fn a_continuation_owned_run_is_skipped_and_kept_while_the_others_are_ended() {
    use makalog::runtime::{read_open_runs, Listing};
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let s = "continued";
    stores
        .sessions
        .create(session_header(s, 1))
        .expect("session");
    interrupted(&stores, s, "r-plain", "running", &["run_started"]);
    let mut owned = run_header(s, "r-owned", "created");
    owned["continuationSource"] = json!({"sourceInvocationId": "r-plain",
        "sourceRunId": "r-plain", "sourceTurnId": "turn-r-plain",
        "sourceRuntimeEventHighWater": 0});
    stores.runs.create_run(owned).expect("continuation run");
    for _ in 0..2 {
        let manager = SessionManager::new(
            stores.clone(),
            BackendRegistry::with_fake(),
            Sources::system(),
        )
        .expect("manager");
        let report = manager.recover_interrupted_sessions().expect("recover");
        let skipped: Vec<&str> = report.skipped.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(skipped, ["continued/r-owned"], "{report:?}");
        assert_eq!(
            stores.runs.read_run(s, "r-owned").expect("run").status(),
            "created",
            "left as it is"
        );
        assert_eq!(
            read_open_runs(&*storage).expect("read"),
            Listing::Open(vec![(s.into(), "r-owned".into())]),
            "kept named for a later start"
        );
    }
    assert_eq!(
        stores.runs.read_run(s, "r-plain").expect("run").status(),
        "failed",
        "the other run is ended"
    );
}
