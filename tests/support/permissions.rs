//! Permission and sandbox requests as a backend streams them, and what a run recorded of them.

use makalog::runtime::{SessionEvent, SessionManager};
use serde_json::{json, Value};

/// A `tool_permission` request (§1.4) for Bash.
pub fn tool_permission(request_id: &str) -> Value {
    json!({"kind": "tool_permission", "requestId": request_id, "toolUseId": "tool-use-1",
           "toolName": "Bash", "category": "shell_unsafe", "reason": "shell_dangerous",
           "args": {"command": "rm -rf build"}, "rememberForTurnAllowed": true})
}

/// A `sandbox_escalation` request (§1.4), every field as the decoder requires.
pub fn sandbox_escalation(request_id: &str) -> Value {
    json!({"kind": "sandbox_escalation", "requestId": request_id, "toolUseId": "tool-use-2",
           "toolName": "Bash", "category": "shell_unsafe", "reason": "sandbox_escalation",
           "command": "curl example.com", "cwd": "/work", "justification": "fetch a fixture",
           "intentHash": "i", "commandHash": "c", "trigger": "proactive",
           "alsoApprovesToolExecution": true, "availableDecisions": ["allow_once", "deny"],
           "risk": {"unsandboxedExecution": true, "unrestrictedFileSystem": true,
                    "unrestrictedNetwork": true, "protectedMetadataExposed": true}})
}

/// The turn's `complete{end_turn}`.
pub fn complete(t: &str) -> SessionEvent {
    SessionEvent::Complete {
        id: format!("c-{t}"),
        turn_id: t.into(),
        ts: 9.0,
        stop_reason: "end_turn".into(),
        context_budget_exhausted_detail: None,
    }
}

/// Session `s`'s one run's event types after `run_started`, with each one's data.
pub fn run_events(manager: &SessionManager) -> Vec<(String, Value)> {
    let stores = manager.stores();
    let run = stores.runs.list_session_runs("s").expect("runs")[0].clone();
    let events = stores.runs.read_events("s", run.run_id()).expect("events");
    let types: Vec<(String, Value)> = events
        .iter()
        .map(|(_, e)| (e.event_type().to_owned(), e.value()["data"].clone()))
        .collect();
    let started = types.iter().position(|(t, _)| t == "run_started");
    types[started.expect("run_started") + 1..].to_vec()
}

/// Turn `t`'s `permission_request` of `request`, its id `<tag>-<t>`.
pub fn permission_request(t: &str, tag: &str, ts: f64, request: Value) -> SessionEvent {
    let (id, turn_id) = (format!("{tag}-{t}"), t.to_owned());
    SessionEvent::PermissionRequest {
        id,
        turn_id,
        ts,
        request,
    }
}

/// Turn `t`'s `sandbox_boundary_request` of `request`, its id `<tag>-<t>`.
pub fn sandbox_request(t: &str, tag: &str, ts: f64, request: Value) -> SessionEvent {
    let (id, turn_id) = (format!("{tag}-{t}"), t.to_owned());
    SessionEvent::SandboxBoundaryRequest {
        id,
        turn_id,
        ts,
        request,
    }
}

/// Turn `t`'s `permission_decision_ack` of `decision`, its id `<tag>-<t>`.
pub fn permission_decision(t: &str, tag: &str, ts: f64, decision: Value) -> SessionEvent {
    let (id, turn_id) = (format!("{tag}-{t}"), t.to_owned());
    SessionEvent::PermissionDecisionAck {
        id,
        turn_id,
        ts,
        decision,
    }
}

/// Turn `t`'s `permission_closure_ack` of `request_id`, timed out, its id `<tag>-<t>`.
pub fn permission_closure(t: &str, tag: &str, ts: f64, request_id: &str) -> SessionEvent {
    let (id, turn_id) = (format!("{tag}-{t}"), t.to_owned());
    SessionEvent::PermissionClosureAck {
        id,
        turn_id,
        ts,
        request_id: request_id.into(),
        reason: "timed_out".into(),
    }
}
