//! A backend's reasoning and token usage (MAKA-MODEL §11) are written as the text is:
//! `thinking_delta`s coalesced into partial events of `thinking` content (a change of kind or
//! message writes the deltas in hand first), `thinking_complete` a durable fact whose text and
//! signature the turn's next assistant message carries (`thinking`, `contentOrder`, §6), and
//! `token_usage` a durable fact: a `token_usage` message and an event whose
//! `actions.tokenUsage` holds it (§1.4), hidden from the model. Usage the ledger refuses fails
//! that fact alone (fail-open, counted), and the turn completes.

mod support;

use makalog::runtime::{SessionEvent, SessionManager};
use makalog::store::ReadOnlySessions;
use serde_json::{json, Map, Value};
use support::scripted::{one_turn, scripted, written};

fn thinking_then_answer(t: &str, usage: Map<String, Value>) -> Vec<SessionEvent> {
    let delta = |n: usize, text: &str| SessionEvent::ThinkingDelta {
        id: format!("th{n}-{t}"),
        turn_id: t.into(),
        ts: 1.0 + n as f64 / 10.0,
        message_id: format!("r-{t}"),
        text: text.into(),
    };
    vec![
        delta(1, "let me"),
        delta(2, " think"),
        delta(3, " hard"),
        SessionEvent::ThinkingComplete {
            id: format!("tc-{t}"),
            turn_id: t.into(),
            ts: 2.0,
            message_id: format!("r-{t}"),
            text: "let me think hard".into(),
            signature: Some("sig-1".into()),
        },
        SessionEvent::TextComplete {
            id: format!("x-{t}"),
            turn_id: t.into(),
            ts: 3.0,
            message_id: format!("m-{t}"),
            text: "partly done".into(),
        },
        SessionEvent::TokenUsage {
            id: format!("u-{t}"),
            turn_id: t.into(),
            ts: 4.0,
            input: 120.0,
            output: 30.0,
            more: Box::new(usage),
        },
        SessionEvent::Complete {
            id: format!("c-{t}"),
            turn_id: t.into(),
            ts: 5.0,
            stop_reason: "end_turn".into(),
            context_budget_exhausted_detail: None,
        },
    ]
}

fn usage(pairs: Value) -> Map<String, Value> {
    pairs.as_object().cloned().expect("an object")
}

/// The session's stored messages of type `kind`.
fn messages(manager: &SessionManager, kind: &str) -> Vec<Value> {
    let (_, _, all) = written(manager);
    all.into_iter()
        .filter(|m| m["type"] == json!(kind))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn reasoning_and_token_usage_are_written_as_facts_and_partials() {
    let (_t, owner, manager) =
        scripted(|t| thinking_then_answer(t, usage(json!({"cacheRead": 100, "total": 150}))));
    let (turn, seen, failures) = one_turn(&manager).await;
    assert_eq!(failures, 0);
    assert!(
        seen.iter().any(|e| e["type"] == "thinking_delta")
            && seen
                .iter()
                .any(|e| e["type"] == "token_usage" && e["cacheRead"] == 100),
        "the caller sees them: {seen:?}"
    );

    // The partials: the text delta's, then the three reasoning deltas as one.
    let read = ReadOnlySessions::new(&**owner.storage());
    let partials: Vec<Value> = read
        .read_runtime_events("s")
        .expect("events")
        .live_partials
        .iter()
        .map(|e| e.value().clone())
        .collect();
    let shapes: Vec<(Value, Value, Value)> = partials
        .iter()
        .map(|p| {
            let c = &p["content"];
            (
                c["kind"].clone(),
                c["text"].clone(),
                p["refs"]["providerEventId"].clone(),
            )
        })
        .collect();
    assert_eq!(
        shapes,
        [
            (json!("text"), json!("partly"), json!(format!("m-{turn}"))),
            (
                json!("thinking"),
                json!("let me think hard"),
                json!(format!("r-{turn}"))
            ),
        ]
    );

    let (_, events, _) = written(&manager);
    let event = |id: String| {
        let e = events.iter().find(|e| e["id"] == json!(id));
        e.expect("the event").clone()
    };
    let thought = event(format!("tc-{turn}"));
    assert_eq!(
        (&thought["content"], thought["partial"].as_bool()),
        (
            &json!({"kind": "thinking", "text": "let me think hard", "signature": "sig-1"}),
            Some(false)
        )
    );
    let used = event(format!("u-{turn}"));
    let want = json!({"input": 120, "output": 30, "cacheRead": 100, "total": 150});
    assert_eq!(used["actions"]["tokenUsage"], want);
    assert_eq!(used["modelVisibility"], json!("hidden"));

    let answer = &messages(&manager, "assistant")[0];
    assert_eq!(
        (&answer["thinking"], &answer["contentOrder"]),
        (
            &json!({"text": "let me think hard", "signature": "sig-1"}),
            &json!(["thinking", "text"])
        )
    );
    let usage = &messages(&manager, "token_usage")[0];
    for (key, value) in want.as_object().expect("an object") {
        assert_eq!(&usage[key], value, "token_usage message: {key}");
    }
    assert_eq!(usage["id"], json!(format!("u-{turn}")));
}

#[tokio::test(start_paused = true)]
async fn usage_the_ledger_refuses_fails_that_fact_alone() {
    let (_t, _owner, manager) =
        scripted(|t| thinking_then_answer(t, usage(json!({"cacheMissInputSource": "guessed"}))));
    let (turn, _, failures) = one_turn(&manager).await;
    assert_eq!(failures, 1, "the usage fact, counted");
    assert!(messages(&manager, "token_usage").is_empty());
    let answer = &messages(&manager, "assistant")[0];
    assert_eq!(answer["id"], json!(format!("m-{turn}")), "the rest stands");
}
