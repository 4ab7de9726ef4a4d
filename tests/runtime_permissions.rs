//! A backend's permission and sandbox requests and their answers (MAKA-MODEL §11, §1.4, §6,
//! §7): each a durable fact (an event whose actions hold it, and the run event recovery
//! reads), a decision on a request of the turn also its `permission_decision` message; the
//! run and the session wait for the user while a request is open. A turn killed while a
//! sandbox request waits is recovered as `sandbox_boundary_closed_by_restart`, its reason
//! `stale_user_wait` (a decision through the manager: `runtime_sandbox_decision.rs`).

mod support;

use makalog::runtime::{SessionEvent, SessionManager};
use serde_json::{json, Value};
use support::permissions::{
    complete, permission_closure, permission_decision, permission_request, run_events,
    sandbox_escalation, sandbox_request, tool_permission,
};
use support::scripted::{one_turn, recovered_copy, scripted, scripted_holding, written};
use support::turns::text;

fn event_actions(manager: &SessionManager, id: &str) -> Value {
    let (_, events, _) = written(manager);
    let e = events.into_iter().find(|e| e["id"] == json!(id));
    e.expect("the event")["actions"].clone()
}

#[tokio::test(start_paused = true)]
async fn a_permission_request_and_its_decision_are_facts_and_the_run_waits_between() {
    let (_t, _owner, manager) = scripted(|t| {
        vec![
            permission_request(t, "pr", 2.0, tool_permission("request-1")),
            permission_decision(
                t,
                "pd",
                3.0,
                json!({"requestId": "request-1", "decision": "allow",
                                 "rememberForTurn": true, "reviewer": "user"}),
            ),
            complete(t),
        ]
    });
    let (turn, _, failures) = one_turn(&manager).await;
    assert_eq!(failures, 0);
    let types: Vec<(String, Value)> = run_events(&manager);
    let names: Vec<&str> = types.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        names,
        [
            "permission_requested",
            "run_status_changed",
            "permission_decided",
            "run_status_changed",
            "run_completed"
        ]
    );
    assert_eq!(
        types[0].1,
        json!({"requestId": "request-1", "toolUseId": "tool-use-1", "toolName": "Bash",
               "category": "shell_unsafe", "kind": "tool_permission"})
    );
    assert_eq!(
        (&types[1].1["status"], &types[3].1["status"]),
        (&json!("waiting_for_user"), &json!("running"))
    );
    assert_eq!(
        event_actions(&manager, &format!("pr-{turn}")),
        json!({"permissionRequest": tool_permission("request-1")})
    );
    assert_eq!(
        event_actions(&manager, &format!("pd-{turn}"))["permissionDecision"]["decision"],
        json!("allow")
    );
    let messages = manager.stores().sessions.read_messages("s", None);
    let decision = messages
        .expect("messages")
        .iter()
        .map(|m| m.value().clone())
        .find(|m| m["type"] == "permission_decision")
        .expect("the decision's message");
    assert_eq!(
        decision,
        json!({"type": "permission_decision", "id": "request-1", "turnId": turn, "ts": 3,
               "toolUseId": "tool-use-1", "toolName": "Bash", "decision": "allow",
               "rememberForTurn": true, "reviewer": "user"})
    );
}

#[tokio::test(start_paused = true)]
async fn a_closed_request_fails_and_a_denied_sandbox_request_is_answered() {
    let (_t, _owner, manager) = scripted(|t| {
        vec![
            permission_request(t, "pr", 2.0, tool_permission("request-1")),
            permission_closure(t, "pc", 3.0, "request-1"),
            sandbox_request(t, "sr", 4.0, sandbox_escalation("request-2")),
            SessionEvent::SandboxBoundaryDecisionAck {
                id: format!("sd-{t}"),
                turn_id: t.into(),
                ts: 5.0,
                request_id: "request-2".into(),
                decision: "deny".into(),
            },
            complete(t),
        ]
    });
    let (turn, _, failures) = one_turn(&manager).await;
    assert_eq!(failures, 0);
    let types = run_events(&manager);
    let names: Vec<&str> = types.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        names,
        [
            "permission_requested",
            "run_status_changed",
            "permission_failed",
            "run_status_changed",
            "sandbox_escalation_requested",
            "run_status_changed",
            "sandbox_escalation_denied",
            "run_status_changed",
            "run_completed"
        ]
    );
    assert_eq!(
        types[2].1,
        json!({"requestId": "request-1", "reason": "timed_out"})
    );
    assert_eq!(
        event_actions(&manager, &format!("pc-{turn}")),
        json!({"permissionClosureAccepted": {"requestId": "request-1", "reason": "timed_out"}})
    );
    let decisions: Vec<Value> = manager
        .stores()
        .sessions
        .read_messages("s", None)
        .expect("messages")
        .iter()
        .map(|m| m.value().clone())
        .filter(|m| m["type"] == "permission_decision")
        .collect();
    assert_eq!(
        decisions.len(),
        1,
        "the sandbox decision's; a closure has none"
    );
    assert_eq!(
        (&decisions[0]["id"], &decisions[0]["decision"]),
        (&json!("request-2"), &json!("deny"))
    );
}

/// With two requests open, answering one leaves the run waiting; the run runs again once
/// both are answered. An answer takes its run event from the request it answers: a
/// permission decision on a sandbox escalation is its grant, a closure of one its failure.
#[tokio::test(start_paused = true)]
async fn the_run_waits_until_every_request_is_answered_and_an_answer_follows_its_request() {
    let (_t, _owner, manager) = scripted(|t| {
        vec![
            permission_request(t, "pr", 2.0, tool_permission("request-1")),
            sandbox_request(t, "sr", 3.0, sandbox_escalation("request-2")),
            permission_decision(
                t,
                "sd",
                4.0,
                json!({"requestId": "request-2", "decision": "allow"}),
            ),
            permission_closure(t, "pc", 5.0, "request-1"),
            sandbox_request(t, "sr2", 6.0, sandbox_escalation("request-3")),
            permission_closure(t, "pc2", 7.0, "request-3"),
            complete(t),
        ]
    });
    let (_, _, failures) = one_turn(&manager).await;
    assert_eq!(failures, 0);
    let seen: Vec<String> = run_events(&manager)
        .into_iter()
        .map(|(t, data)| match t.as_str() {
            "run_status_changed" => format!("-> {}", data["status"].as_str().unwrap_or("?")),
            _ => t,
        })
        .collect();
    assert_eq!(
        seen,
        [
            "permission_requested",
            "-> waiting_for_user",
            "sandbox_escalation_requested",
            "-> waiting_for_user",
            "sandbox_escalation_granted",
            "permission_failed",
            "-> running",
            "sandbox_escalation_requested",
            "-> waiting_for_user",
            "sandbox_escalation_failed",
            "-> running",
            "run_completed"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_turn_killed_while_a_sandbox_request_waits_is_recovered_as_closed_by_the_restart() {
    let (t, _owner, manager) = scripted_holding(|t| {
        vec![sandbox_request(
            t,
            "sr",
            2.0,
            sandbox_escalation("request-9"),
        )]
    });
    let mut turn = manager.send_message("s", text("go")).await.expect("send");
    while let Some(e) = turn.events.recv().await {
        if matches!(e, SessionEvent::SandboxBoundaryRequest { .. }) {
            break;
        }
    }
    // The request reached the caller, so it is durable: the files now are what a kill leaves.
    let (_killed, after) = recovered_copy(t.path());
    let run = after.stores().runs.list_session_runs("s").expect("runs")[0].clone();
    let closed = makalog::runtime::SANDBOX_BOUNDARY_CLOSED;
    assert_eq!(
        (run.status(), &run.value()["failureClass"]),
        ("failed", &json!(closed))
    );
    let events = after.stores().runs.read_events("s", run.run_id());
    let failed: Vec<Value> = events
        .expect("events")
        .iter()
        .filter(|(_, e)| e.event_type() == "run_failed")
        .map(|(_, e)| e.value()["data"].clone())
        .collect();
    assert_eq!(
        (&failed[0]["failureClass"], &failed[0]["recoveryReason"]),
        (&json!(closed), &json!("stale_user_wait"))
    );

    // The live turn, stopped, ends as a stop does.
    manager.stop("s", "stop_button").expect("stop");
    assert_eq!(turn.finish().await.expect("ends").status, "cancelled");
}
