//! Where a turn comes from (MAKA-MODEL §12 steps 1–4, §1.2, §1.3, §6, §7): a turn's origin
//! (a scheduled task, a goal, an agent graph's wake) makes its user event the host's and
//! states itself in the user message and event, the run header and the invocation's root;
//! its lineage is in the run header, the opening and every `turn_state`, recovery's
//! included. An origin that is no TurnOrigin, an empty origin id and an empty lineage id are
//! refused by field, with nothing written; an `automation` origin is stated as the
//! `legacy_automation` it is read as.

mod support;

use makalog::runtime::{SessionEvent, TurnInput, TurnLineage};
use serde_json::{json, Value};
use support::scripted::{recovered_copy, scripted, scripted_holding, written};
use support::stores::session_files;

fn complete(t: &str) -> Vec<SessionEvent> {
    vec![SessionEvent::Complete {
        id: format!("c-{t}"),
        turn_id: t.into(),
        ts: 9.0,
        stop_reason: "end_turn".into(),
        context_budget_exhausted_detail: None,
    }]
}

fn lineage() -> TurnLineage {
    TurnLineage {
        retried_from_turn_id: Some("turn-0".into()),
        parent_session_id: Some("parent".into()),
        retried_from_run_id: Some("run-0".into()),
        ..TurnLineage::default()
    }
}

fn input(origin: Option<Value>, lineage: TurnLineage) -> TurnInput {
    TurnInput {
        text: "the nightly check".into(),
        origin,
        lineage,
        ..TurnInput::default()
    }
}

fn states(messages: &[Value]) -> Vec<&Value> {
    messages
        .iter()
        .filter(|m| m["type"] == "turn_state")
        .collect()
}

#[tokio::test(start_paused = true)]
async fn an_origin_and_a_lineage_are_stated_wherever_the_ledger_has_a_place() {
    let (_t, _owner, manager) = scripted(complete);
    let origin = json!({"kind": "scheduled_task", "scheduledTaskId": "task-1"});
    let turn = manager
        .send_message("s", input(Some(origin.clone()), lineage()))
        .await
        .expect("send");
    assert_eq!(turn.finish().await.expect("ends").status, "completed");
    let (run, events, messages) = written(&manager);
    for (key, want) in [
        ("scheduledTaskId", "task-1"),
        ("retriedFromTurnId", "turn-0"),
        ("parentSessionId", "parent"),
        ("retriedFromRunId", "run-0"),
    ] {
        assert_eq!(run[key], json!(want), "the run header's {key}");
    }
    let opening = &events[0]["content"];
    assert_eq!(opening["kind"], json!("invocation_opened"));
    assert_eq!(
        (&opening["root"], &opening["lineage"]),
        (
            &json!({"kind": "scheduled_task", "scheduledTaskId": "task-1"}),
            &json!({"retriedFromTurnId": "turn-0", "parentSessionId": "parent",
                    "retriedFromRunId": "run-0"})
        )
    );
    let user = messages.iter().find(|m| m["type"] == "user").expect("user");
    assert_eq!(user["origin"], origin);
    let event = events
        .iter()
        .find(|e| e["id"] == user["id"])
        .expect("the user event");
    assert_eq!(
        (&event["author"], &event["content"]["origin"]),
        (&json!("host"), &origin)
    );
    let states = states(&messages);
    assert_eq!(states.len(), 2, "running, then completed");
    for state in states {
        assert_eq!(
            (&state["retriedFromTurnId"], &state["parentSessionId"]),
            (&json!("turn-0"), &json!("parent")),
            "{state}"
        );
        assert!(state.get("retriedFromRunId").is_none(), "§6 has no run ids");
    }
}

#[tokio::test(start_paused = true)]
async fn an_agent_graph_wake_names_its_wake_and_a_plain_turn_is_the_users() {
    let (_t, _owner, manager) = scripted(complete);
    let origin =
        json!({"kind": "agent_graph", "graphId": "g", "wakeId": "w-1", "attemptId": "a-1"});
    let turn = manager
        .send_message("s", input(Some(origin), TurnLineage::default()))
        .await
        .expect("send");
    turn.finish().await.expect("ends");
    let (run, events, _) = written(&manager);
    assert_eq!(
        (&run["agentGraphWakeId"], &run["agentGraphWakeAttemptId"]),
        (&json!("w-1"), &json!("a-1"))
    );
    assert_eq!(
        events[0]["content"]["root"],
        json!({"kind": "agent_graph_supervisor_wake", "wakeId": "w-1", "attemptId": "a-1"})
    );
    assert!(events[0]["content"].get("lineage").is_none(), "none given");

    let (_t, _owner, manager) = scripted(complete);
    let turn = manager
        .send_message("s", input(None, TurnLineage::default()))
        .await
        .expect("send");
    turn.finish().await.expect("ends");
    let (_, events, messages) = written(&manager);
    assert_eq!(events[0]["content"]["root"], json!({"kind": "user"}));
    let user = messages.iter().find(|m| m["type"] == "user").expect("user");
    assert!(user.get("origin").is_none());
    let event = events
        .iter()
        .find(|e| e["id"] == user["id"])
        .expect("event");
    assert_eq!(event["author"], json!("user"));
}

#[tokio::test(start_paused = true)]
async fn a_bad_origin_or_an_empty_id_is_refused_with_nothing_written() {
    let (t, _owner, manager) = scripted(complete);
    let root = t.path().join("root");
    let before = session_files(&root, "s");
    let bad_origin = input(
        Some(json!({"kind": "cron", "id": "x"})),
        TurnLineage::default(),
    );
    let empty = TurnLineage {
        parent_turn_id: Some(String::new()),
        ..TurnLineage::default()
    };
    let empty_task = json!({"kind": "scheduled_task", "scheduledTaskId": ""});
    let empty_wake = json!({"kind": "agent_graph", "graphId": "g", "wakeId": "", "attemptId": "a"});
    for (what, bad) in [
        ("origin:", bad_origin),
        (
            "origin.scheduledTaskId",
            input(Some(empty_task), TurnLineage::default()),
        ),
        (
            "origin.wakeId",
            input(Some(empty_wake), TurnLineage::default()),
        ),
        ("lineage.parentTurnId", input(None, empty)),
    ] {
        match manager.send_message("s", bad).await {
            Err(makalog::Error::InvalidInput(why)) => assert!(why.starts_with(what), "{why}"),
            Err(e) => panic!("{what}: {e}"),
            Ok(_) => panic!("{what}: accepted"),
        }
        assert_eq!(session_files(&root, "s"), before, "{what}: nothing written");
    }
    assert!(manager
        .stores()
        .runs
        .list_session_runs("s")
        .expect("runs")
        .is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_automation_origin_is_stated_as_the_legacy_automation_it_is_read_as() {
    let (_t, _owner, manager) = scripted(complete);
    let origin = json!({"kind": "automation", "automationId": "auto-1"});
    let turn = manager
        .send_message("s", input(Some(origin), TurnLineage::default()))
        .await
        .expect("send");
    turn.finish().await.expect("ends");
    let (run, events, messages) = written(&manager);
    let read_as = json!({"kind": "legacy_automation", "automationId": "auto-1"});
    let user = messages.iter().find(|m| m["type"] == "user").expect("user");
    assert_eq!(user["origin"], read_as, "the message as the event");
    let event = events
        .iter()
        .find(|e| e["id"] == user["id"])
        .expect("event");
    assert_eq!(event["content"]["origin"], read_as);
    assert_eq!(run["legacyAutomationId"], json!("auto-1"));
    assert_eq!(
        events[0]["content"]["root"],
        json!({"kind": "legacy_automation", "legacyAutomationId": "auto-1"})
    );
}

#[tokio::test(start_paused = true)]
async fn recovery_states_the_lineage_of_an_interrupted_turn() {
    let (t, _owner, manager) = scripted_holding(|_| Vec::new());
    let mut turn = manager
        .send_message("s", input(None, lineage()))
        .await
        .expect("send");
    // The delta reached the caller: the opening is durable.
    turn.events.recv().await.expect("the delta");
    let (_killed, after) = recovered_copy(t.path());
    let (run, _, messages) = written(&after);
    assert_eq!(run["failureClass"], json!("app_restarted"));
    let states = states(&messages);
    let last = states.last().expect("recovery's turn_state");
    assert_eq!(
        (
            &last["status"],
            &last["retriedFromTurnId"],
            &last["parentSessionId"]
        ),
        (&json!("failed"), &json!("turn-0"), &json!("parent"))
    );
    manager.stop("s", "stop_button").expect("stop");
    turn.finish().await.expect("ends");
}
