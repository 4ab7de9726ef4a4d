//! How a turn a backend ends on its own is written (MAKA-MODEL §11).
//!
//! - An `abort {reason: user_stop, redirect, timeout or crash}` nobody asked the runtime for
//!   → aborted, with the backend's reason as `abortSource` (and no stop reason, which only a
//!   `complete` gives) in the terminal event's state,
//!   the run and the turn's `turn_state`, never a stop button nobody pressed (a stop the
//!   runtime asked for keeps its own source).
//! - An `error`'s `details` → its error content, and the failed terminal's copy of it; a turn
//!   that answered before it failed kept its output (`partialOutputRetained`).
//! - A `complete`'s `contextBudgetExhaustedDetail` → the terminal's state.

mod support;

use makalog::runtime::{SessionEvent, SessionManager};
use serde_json::{json, Value};
use support::scripted::{scripted, Script};
use support::turns::text;

fn abort(turn_id: &str, reason: &str) -> Vec<SessionEvent> {
    vec![SessionEvent::Abort {
        id: format!("a-{turn_id}"),
        turn_id: turn_id.into(),
        ts: 2.0,
        reason: reason.into(),
    }]
}

/// What the ledger says of the session's one run: its status and abort source, its terminal
/// event's state delta, and its turn's latest `turn_state`.
fn ended(manager: &SessionManager, session: &str) -> (Value, Value, Value, Value) {
    let stores = manager.stores();
    let runs = stores.runs.list_session_runs(session).expect("runs");
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    let terminal: Vec<Value> = stores
        .runtime_events
        .read_immutable_runtime_events(session, run.run_id())
        .expect("events")
        .into_iter()
        .filter(|e| !e.partial() && e.is_terminal())
        .map(|e| e.value().clone())
        .collect();
    assert_eq!(terminal.len(), 1, "one terminal event");
    let state = support::stores::latest_turn_state(stores, session, None);
    (
        json!(run.status()),
        run.value()["abortSource"].clone(),
        terminal[0]["actions"]["stateDelta"].clone(),
        state,
    )
}

#[tokio::test(start_paused = true)]
async fn a_backend_abort_is_recorded_with_the_backends_reason() {
    let scripts: [(&str, Script); 3] = [
        ("timeout", |t| abort(t, "timeout")),
        ("crash", |t| abort(t, "crash")),
        ("redirect", |t| abort(t, "redirect")),
    ];
    for (reason, script) in scripts {
        let (_t, _owner, manager) = scripted(script);
        let turn = manager.send_message("s", text("go")).await.expect("send");
        let outcome = turn.finish().await.expect("the turn ends");
        assert_eq!(outcome.status, "cancelled", "{reason}");
        let (status, source, delta, state) = ended(&manager, "s");
        assert_eq!(
            (status, source),
            (json!("cancelled"), json!(reason)),
            "{reason}: the run"
        );
        assert_eq!(
            (&delta["abortSource"], delta.get("stopReason")),
            (&json!(reason), None),
            "{reason}: the terminal event (an abort states no stop reason)"
        );
        assert_eq!(
            (&state["status"], &state["abortSource"]),
            (&json!("aborted"), &json!(reason)),
            "{reason}: the turn"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn an_errors_details_and_a_budgets_detail_are_kept() {
    let (_t, _owner, manager) = scripted(|t| {
        vec![
            SessionEvent::TextComplete {
                id: format!("x-{t}"),
                turn_id: t.into(),
                ts: 1.5,
                message_id: format!("m-{t}"),
                text: "partly".into(),
            },
            SessionEvent::Error {
                id: format!("e-{t}"),
                turn_id: t.into(),
                ts: 2.0,
                recoverable: false,
                message: "the provider refused".into(),
                code: Some("provider".into()),
                reason: None,
                details: Some(json!(["quota", "region"])),
            },
            SessionEvent::Complete {
                id: format!("c-{t}"),
                turn_id: t.into(),
                ts: 3.0,
                stop_reason: "error".into(),
                context_budget_exhausted_detail: None,
            },
        ]
    });
    let turn = manager.send_message("s", text("go")).await.expect("send");
    assert_eq!(turn.finish().await.expect("the turn").status, "failed");
    let stores = manager.stores();
    let run = stores.runs.list_session_runs("s").expect("runs")[0].clone();
    let events = stores
        .runtime_events
        .read_immutable_runtime_events("s", run.run_id())
        .expect("events");
    let error = events
        .iter()
        .find(|e| e.id().starts_with("e-"))
        .expect("the error's event");
    assert_eq!(
        error.value()["content"]["details"],
        json!(["quota", "region"])
    );
    let terminal = events.iter().find(|e| e.is_terminal()).expect("terminal");
    assert_eq!(
        terminal.value()["content"]["details"],
        json!(["quota", "region"]),
        "the failed terminal copies the error's content"
    );
    let (_, _, _, state) = ended(&manager, "s");
    assert_eq!(
        (&state["status"], &state["partialOutputRetained"]),
        (&json!("failed"), &json!(true)),
        "a failed turn that answered kept its output"
    );
    assert_eq!(run.value()["failureMessage"], json!("the provider refused"));

    let (_t, _owner, manager) = scripted(|t| {
        vec![SessionEvent::Complete {
            id: format!("c-{t}"),
            turn_id: t.into(),
            ts: 3.0,
            stop_reason: "context_budget_exhausted".into(),
            context_budget_exhausted_detail: Some("summarizer_failed".into()),
        }]
    });
    let turn = manager.send_message("s", text("go")).await.expect("send");
    assert_eq!(turn.finish().await.expect("the turn").status, "failed");
    let (status, _, delta, _) = ended(&manager, "s");
    assert_eq!(status, json!("failed"));
    assert_eq!(
        (
            &delta["failureClass"],
            &delta["contextBudgetExhaustedDetail"]
        ),
        (
            &json!("context_budget_exhausted"),
            &json!("summarizer_failed")
        )
    );
}
