//! A tool call's and a tool result's optional fields (MAKA-MODEL §11) are kept where the
//! ledger has a place for them: every one in the stored message (§6) but `operationId`, the
//! ids also in the event's refs (§1.5), the provider fields also in its content (§1.2), the
//! display name and intent in its state delta (§2's third vector), and `origin` and
//! `modelVisibility` on its envelope (§1.1) when they are values it takes. A
//! value only the message can hold costs the fact nothing. The caller sees them all, and a
//! delta's `startOffset`.

mod support;

use makalog::runtime::{SessionEvent, SessionManager, ToolResultDetails, ToolStartDetails};
use serde_json::{json, Value};
use support::scripted::{one_turn, scripted, written};

fn tool_events(t: &str, origin: &str) -> Vec<SessionEvent> {
    vec![
        SessionEvent::ToolStart {
            id: format!("ts-{t}"),
            turn_id: t.into(),
            ts: 2.0,
            tool_use_id: format!("tool-{t}"),
            tool_name: "Read".into(),
            args: json!({"path": "src/lib.rs"}),
            details: Box::new(ToolStartDetails {
                operation_id: Some("op-1".into()),
                activity_kind: Some("read".into()),
                provider_options: Some(json!({"cache": true})),
                provider_executed: Some(false),
                display_name: Some("Read src/lib.rs".into()),
                intent: Some("look at the entry point".into()),
                step_id: Some("step-1".into()),
                origin: Some(origin.into()),
                model_visibility: Some("visible".into()),
                parent_tool_call_id: Some("tool-parent".into()),
                parent_operation_id: Some("op-parent".into()),
            }),
        },
        SessionEvent::ToolResult {
            id: format!("tr-{t}"),
            turn_id: t.into(),
            ts: 3.0,
            tool_use_id: format!("tool-{t}"),
            is_error: false,
            content: json!({"kind": "text", "text": "fn main() {}"}),
            details: Box::new(ToolResultDetails {
                operation_id: Some("op-1".into()),
                provider_executed: Some(false),
                provider_output: Some(json!({"bytes": 12})),
                duration_ms: Some(7.5),
                origin: Some(origin.into()),
                model_visibility: Some("hidden".into()),
                parent_tool_call_id: Some("tool-parent".into()),
                parent_operation_id: Some("op-parent".into()),
            }),
        },
        SessionEvent::Complete {
            id: format!("c-{t}"),
            turn_id: t.into(),
            ts: 4.0,
            stop_reason: "end_turn".into(),
            context_budget_exhausted_detail: None,
        },
    ]
}

/// The session's stored message and runtime event of these ids.
fn stored(manager: &SessionManager, message: &str, event: &str) -> (Value, Value) {
    let (_, events, messages) = written(manager);
    let m = messages.into_iter().find(|m| m["id"] == json!(message));
    let e = events.into_iter().find(|e| e["id"] == json!(event));
    (m.expect("the message"), e.expect("the event"))
}

#[tokio::test(start_paused = true)]
async fn a_tool_calls_and_results_optional_fields_are_kept_where_the_ledger_has_a_place() {
    let (_t, _owner, manager) = scripted(|t| tool_events(t, "provider"));
    let (turn, seen, failures) = one_turn(&manager).await;
    assert_eq!(failures, 0);
    assert_eq!(
        seen[0]["startOffset"],
        json!(0),
        "the caller sees the offset"
    );
    let start = seen
        .iter()
        .find(|e| e["type"] == "tool_start")
        .expect("start");
    assert_eq!(
        (&start["operationId"], &start["displayName"]),
        (&json!("op-1"), &json!("Read src/lib.rs")),
        "the caller sees the details"
    );

    let (call, event) = stored(&manager, &format!("tool-{turn}"), &format!("ts-{turn}"));
    for (key, want) in [
        ("activityKind", json!("read")),
        ("displayName", json!("Read src/lib.rs")),
        ("intent", json!("look at the entry point")),
        ("providerOptions", json!({"cache": true})),
        ("providerExecuted", json!(false)),
        ("stepId", json!("step-1")),
        ("origin", json!("provider")),
        ("modelVisibility", json!("visible")),
        ("parentToolCallId", json!("tool-parent")),
        ("parentOperationId", json!("op-parent")),
    ] {
        assert_eq!(call[key], want, "tool_call message: {key}");
    }
    assert!(call.get("operationId").is_none(), "§6 has no operationId");
    assert_eq!(
        event["content"],
        json!({"kind": "function_call", "id": format!("tool-{turn}"), "name": "Read",
               "args": {"path": "src/lib.rs"}, "providerOptions": {"cache": true},
               "providerExecuted": false})
    );
    assert_eq!(
        event["refs"],
        json!({"toolCallId": format!("tool-{turn}"), "operationId": "op-1", "stepId": "step-1",
               "parentToolCallId": "tool-parent", "parentOperationId": "op-parent"})
    );
    assert_eq!(
        (&event["origin"], &event["modelVisibility"]),
        (&json!("provider"), &json!("visible"))
    );
    assert_eq!(
        event["actions"],
        json!({"stateDelta": {"displayName": "Read src/lib.rs",
                              "intent": "look at the entry point"}}),
        "as §2's third vector holds them"
    );

    let (result, event) = stored(&manager, &format!("tr-{turn}"), &format!("tr-{turn}"));
    for (key, want) in [
        ("durationMs", json!(7.5)),
        ("providerExecuted", json!(false)),
        ("providerOutput", json!({"bytes": 12})),
        ("origin", json!("provider")),
        ("modelVisibility", json!("hidden")),
        ("parentToolCallId", json!("tool-parent")),
        ("parentOperationId", json!("op-parent")),
    ] {
        assert_eq!(result[key], want, "tool_result message: {key}");
    }
    assert!(result.get("operationId").is_none(), "§6 has no operationId");
    assert_eq!(
        (
            &event["content"]["providerExecuted"],
            &event["content"]["providerOutput"]
        ),
        (&json!(false), &json!({"bytes": 12}))
    );
    assert_eq!(event["refs"]["operationId"], json!("op-1"));
    assert_eq!(event["modelVisibility"], json!("hidden"));
}

#[tokio::test(start_paused = true)]
async fn an_origin_the_envelope_cannot_take_stays_in_the_message_and_the_fact_is_written() {
    let (_t, _owner, manager) = scripted(|t| tool_events(t, "host"));
    let (turn, _, failures) = one_turn(&manager).await;
    assert_eq!(failures, 0, "no fact failed");
    let (call, event) = stored(&manager, &format!("tool-{turn}"), &format!("ts-{turn}"));
    assert_eq!(call["origin"], json!("host"));
    assert!(
        event.get("origin").is_none(),
        "§1.1 takes provider or code_mode"
    );
    assert_eq!(event["modelVisibility"], json!("visible"));
}

/// A tool result whose message the ledger refuses (a duration that is no number) fails as a
/// whole: no event is written without its message and run event.
#[tokio::test(start_paused = true)]
async fn a_tool_result_the_ledger_refuses_is_written_not_at_all() {
    let (_t, _owner, manager) = scripted(|t| {
        let mut events = tool_events(t, "provider");
        if let SessionEvent::ToolResult { details, .. } = &mut events[1] {
            details.duration_ms = Some(f64::NAN);
        }
        events
    });
    let (turn, _, failures) = one_turn(&manager).await;
    assert_eq!(failures, 1, "the result's fact, counted");
    let (_, events, messages) = written(&manager);
    assert!(
        events
            .iter()
            .all(|e| e["id"] != json!(format!("tr-{turn}"))),
        "no event"
    );
    assert!(messages.iter().all(|m| m["type"] != "tool_result"));
    let stores = manager.stores();
    let run = stores.runs.list_session_runs("s").expect("runs")[0].clone();
    let kinds = stores
        .runs
        .read_events("s", run.run_id())
        .expect("run events");
    assert!(kinds
        .iter()
        .all(|(_, e)| e.event_type() != "tool_completed"));
    assert!(
        kinds.iter().any(|(_, e)| e.event_type() == "tool_started"),
        "the call's fact stands"
    );
}
