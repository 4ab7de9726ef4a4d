//! How a turn ends besides its echo (MAKA-MODEL §11–§12), on tokio's paused clock: a question
//! answered and one stopped, the error prompts and their failure classes, and a stop
//! mid-stream, after which the session's next turn waits for the first.

mod support;

use makalog::runtime::{SessionEvent, TurnInput, FAKE_ASK_USER_QUESTION_PROMPT};
use serde_json::json;
use support::turns::*;

#[tokio::test(start_paused = true)]
async fn a_question_waits_for_its_answers_and_a_stopped_one_ends_the_turn_aborted() {
    let f = fixture();
    let s = session(&f);
    let mut turn = f
        .manager
        .send_message(&s, text(FAKE_ASK_USER_QUESTION_PROMPT))
        .await
        .expect("send");
    let SessionEvent::UserQuestionRequest { request_id, .. } =
        events_until(&mut turn, "user_question_request").await
    else {
        unreachable!()
    };
    let stores = f.manager.stores();
    let run_id = stores.runs.list_session_runs(&s).expect("runs")[0]
        .run_id()
        .to_owned();
    assert_eq!(
        stores.runs.read_run(&s, &run_id).expect("run").status(),
        "waiting_for_user"
    );
    assert!(!f
        .manager
        .respond_to_user_question(&s, "another-request", vec![])
        .expect("answer"));
    let answers = vec![Some("storage".into()), Some("deep".into()), None];
    assert!(f
        .manager
        .respond_to_user_question(&s, &request_id, answers)
        .expect("answer"));
    let outcome = turn.finish().await.expect("turn");
    assert_eq!(outcome.status, "completed");
    assert_eq!(
        outcome.summary,
        "Fake question answers: storage / deep / 未回答"
    );
    let messages = stores
        .sessions
        .read_messages(&s, Some(&outcome.turn_id))
        .expect("messages");
    let types: Vec<&str> = messages.iter().map(|m| m.message_type()).collect();
    assert!(
        types.contains(&"tool_call") && types.contains(&"tool_result"),
        "{types:?}"
    );

    let mut turn = f
        .manager
        .send_message(&s, text(FAKE_ASK_USER_QUESTION_PROMPT))
        .await
        .expect("send");
    events_until(&mut turn, "user_question_request").await;
    assert!(f.manager.stop(&s, "stop_button").expect("stop"));
    let outcome = turn.finish().await.expect("turn");
    assert_eq!(outcome.status, "cancelled");
    let run = stores.runs.read_run(&s, &outcome.run_id).expect("run");
    assert_eq!(run.value()["abortSource"], json!("stop_button"));
    let aborted = stores
        .runtime_events
        .read_immutable_runtime_events(&s, &outcome.run_id)
        .expect("events")
        .iter()
        .filter(|e| e.status() == Some("aborted"))
        .count();
    assert_eq!(aborted, 1, "exactly one terminal fact");
}

#[tokio::test(start_paused = true)]
async fn the_error_prompts_fail_the_turn_with_their_failure_class() {
    let f = fixture();
    let s = session(&f);
    for (prompt, class, message) in [
        (
            "__e2e_error__:network",
            "network",
            "Deterministic network failure",
        ),
        (
            "__e2e_error__:rate_limit",
            "rate_limit",
            "Deterministic rate_limit failure",
        ),
        ("__e2e_error__:disk", "runtime_error", "Operation failed"),
    ] {
        let outcome = f
            .manager
            .send_message(&s, text(prompt))
            .await
            .expect("send")
            .finish()
            .await
            .expect("turn");
        assert_eq!(
            (outcome.status.as_str(), outcome.failure_class.as_deref()),
            ("failed", Some(class))
        );
        let events = f
            .manager
            .stores()
            .runtime_events
            .read_immutable_runtime_events(&s, &outcome.run_id)
            .expect("events");
        let terminal = events
            .iter()
            .find(|e| e.is_terminal())
            .expect("a terminal event");
        assert_eq!(terminal.value()["content"]["message"], json!(message));
        assert_eq!(
            terminal.value()["actions"]["stateDelta"]["failureClass"],
            json!(class)
        );
        let states = f
            .manager
            .stores()
            .sessions
            .read_messages(&s, Some(&outcome.turn_id))
            .expect("read");
        let last = states
            .iter()
            .rev()
            .find(|m| m.message_type() == "turn_state")
            .expect("turn_state");
        assert_eq!(
            (
                last.value()["status"].clone(),
                last.value()["errorClass"].clone()
            ),
            (json!("failed"), json!(class))
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_stop_mid_stream_ends_the_run_cancelled_and_the_next_turn_waits_for_the_first() {
    let f = fixture();
    let s = session(&f);
    let mut first = f
        .manager
        .send_message(&s, text("a long answer"))
        .await
        .expect("send");
    events_until(&mut first, "text_delta").await;
    let manager = f.manager.clone();
    let session = s.clone();
    // The second turn of the session starts only once the first has ended.
    let second = tokio::spawn(async move {
        manager
            .send_message(&session, text("next"))
            .await
            .expect("send")
            .finish()
            .await
    });
    tokio::task::yield_now().await;
    assert!(f.manager.stop(&s, "stop_button").expect("stop"));
    let outcome = first.finish().await.expect("first");
    assert_eq!(outcome.status, "cancelled");
    let next = second.await.expect("task").expect("second");
    assert_eq!(next.status, "completed");
    let runs = f.manager.stores().runs.list_session_runs(&s).expect("runs");
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].run_id(), outcome.run_id);
    assert_eq!(runs[1].run_id(), next.run_id);
    // The clock ticks at every reading: the second run was made after the first had ended.
    let ended = runs[0].value()["completedAt"]
        .as_f64()
        .expect("completedAt");
    let created = runs[1].value()["createdAt"].as_f64().expect("createdAt");
    assert!(ended < created, "{ended} !< {created}");
    // And in the log: the first turn's end, up to its turn_state, before the second's run.
    let log = labels(&f.storage, &s);
    let first_end = log.iter().position(|l| l == "turn_state:aborted");
    let second_run = log.iter().rposition(|l| l == "run:created");
    assert!(first_end.is_some() && first_end < second_run, "{log:?}");
}

/// A stop can name its turn: one naming a turn that has ended stops nothing, so a caller whose
/// turn ended as it asked (a claimed run's abort) never stops the session's next turn.
#[tokio::test(start_paused = true)]
async fn a_stop_naming_an_ended_turn_does_not_stop_the_next() {
    let f = fixture();
    let s = session(&f);
    let turn = |id: &str, t: &str| TurnInput {
        turn_id: Some(id.into()),
        ..text(t)
    };
    let first = f.manager.send_message(&s, turn("turn-1", "hi")).await;
    let first = first.expect("send").finish().await.expect("first");
    assert_eq!(first.status, "completed");
    let mut second = f
        .manager
        .send_message(&s, turn("turn-2", "a long answer"))
        .await
        .expect("send");
    events_until(&mut second, "text_delta").await;
    assert!(!f
        .manager
        .stop_turn(&s, "turn-1", "stop_button")
        .expect("stop"));
    assert_eq!(second.finish().await.expect("second").status, "completed");
    let mut third = f
        .manager
        .send_message(&s, turn("turn-3", "a long answer"))
        .await
        .expect("send");
    events_until(&mut third, "text_delta").await;
    assert!(f
        .manager
        .stop_turn(&s, "turn-3", "stop_button")
        .expect("stop"));
    assert_eq!(third.finish().await.expect("third").status, "cancelled");
}
