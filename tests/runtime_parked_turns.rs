//! A turn parked in `waiting_for_user` commits no terminal (MAKA-MODEL §12, step 8): a stream
//! that closes while a question or a permission request waits for the user, with no stop
//! asked, leaves the run and the session waiting, the invocation open and no `run_*` ending;
//! the next start ends the run as recovery's rule 2 says (`stale_user_wait`), once.

mod support;

use makalog::runtime::SessionEvent;
use serde_json::json;
use support::permissions::{complete, permission_request, tool_permission};
use support::scripted::{recovered_copy_reporting, scripted, Script};

/// The turn that parks; every other completes.
const PARKED: &str = "turn-parked";

/// A question for the user, then the stream closes.
fn asks(t: &str) -> Vec<SessionEvent> {
    if t != PARKED {
        return vec![complete(t)];
    }
    vec![SessionEvent::UserQuestionRequest {
        id: format!("q-{t}"),
        turn_id: t.into(),
        ts: 2.0,
        request_id: "question-1".into(),
        tool_use_id: "tool-1".into(),
        questions: json!([{"question": "Which?", "options": []}]),
    }]
}

/// A permission request, then the stream closes.
fn requests(t: &str) -> Vec<SessionEvent> {
    if t != PARKED {
        return vec![complete(t)];
    }
    vec![permission_request(
        t,
        "pr",
        2.0,
        tool_permission("request-1"),
    )]
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_closes_while_the_user_is_asked_parks_the_turn_until_a_restart() {
    let scripts: [(&str, Script); 2] = [("question", asks), ("permission", requests)];
    for (case, script) in scripts {
        let (t, _owner, manager) = scripted(script);
        // A recovery at start makes the open-runs file, which the parked run stays named in.
        manager.recover_interrupted_sessions().expect("start");
        let input = makalog::runtime::TurnInput {
            turn_id: Some(PARKED.into()),
            ..support::turns::text("go")
        };
        let mut turn = manager.send_message("s", input).await.expect("send");
        let mut seen = Vec::new();
        while let Some(e) = turn.events.recv().await {
            seen.push(serde_json::to_value(&e).expect("an event serializes")["type"].clone());
        }
        let outcome = turn.finish().await.expect("the turn");
        assert_eq!(outcome.status, "waiting_for_user", "{case}");
        assert_eq!(outcome.failure_class, None, "{case}");
        assert!(
            !seen.contains(&json!("complete")) && !seen.contains(&json!("error")),
            "{case}: nothing ends the caller's stream but its close: {seen:?}"
        );
        let stores = manager.stores();
        let run = stores.runs.read_run("s", &outcome.run_id).expect("run");
        assert_eq!(run.status(), "waiting_for_user", "{case}");
        let kinds: Vec<String> = stores
            .runs
            .read_events("s", &outcome.run_id)
            .expect("events")
            .iter()
            .map(|(_, e)| e.event_type().to_owned())
            .collect();
        assert!(
            !kinds.iter().any(|k| k.starts_with("run_")
                && matches!(&k[4..], "completed" | "failed" | "cancelled")),
            "{case}: no run_* ending: {kinds:?}"
        );
        let terminals = stores
            .runtime_events
            .read_immutable_runtime_events("s", &outcome.run_id)
            .expect("events")
            .iter()
            .filter(|e| e.is_terminal())
            .count();
        assert_eq!(terminals, 0, "{case}: no terminal event");
        let header = stores.sessions.read_session("s").expect("read").expect("s");
        assert_eq!(header.status(), "waiting_for_user", "{case}");
        // The parked turn is not in flight: no stop reaches it.
        let stopped = manager.stop_turn("s", &outcome.turn_id, "stop_button");
        assert!(!stopped.expect("stop"), "{case}: not in flight");
        // The session's next turn runs, and ending it does not let the parked run go
        // unrecovered.
        let (next, _, _) = support::scripted::one_turn(&manager).await;

        let (_copy, restarted, report) = recovered_copy_reporting(t.path());
        assert!(!report.scanned_all, "{case}: found by the open-runs file");
        let ended: Vec<_> = report.recovered.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ended, [outcome.run_id.as_str()], "{case}");
        let stores = restarted.stores();
        let run = stores.runs.read_run("s", &outcome.run_id).expect("run");
        assert_eq!(run.status(), "failed", "{case}");
        assert_eq!(run.value()["failureClass"], "app_restarted", "{case}");
        let failed: Vec<_> = stores
            .runs
            .read_events("s", &outcome.run_id)
            .expect("events")
            .into_iter()
            .filter(|(_, e)| e.event_type() == "run_failed")
            .collect();
        assert_eq!(failed.len(), 1, "{case}");
        assert_eq!(
            failed[0].1.value()["data"]["recoveryReason"],
            "stale_user_wait",
            "{case}"
        );
        let next_run = stores.runs.list_session_runs("s").expect("runs");
        let next_run = next_run.iter().find(|r| r.value()["turnId"] == json!(next));
        assert_eq!(
            next_run.expect("the next run").status(),
            "completed",
            "{case}"
        );
        let again = restarted.recover_interrupted_sessions().expect("again");
        assert!(again.recovered.is_empty(), "{case}: {:?}", again.recovered);
    }
}

/// A parked run that a recovery of this life ends (a host may run one mid-life, and a claimed
/// intent's retry does) is no longer counted in flight: once more sessions than the open-runs
/// file keeps idle have run turns, the parked session's slot is freed like any idle one's.
/// The count was never given back, so the session stayed named, and its slot held, until a
/// restart.
#[tokio::test(start_paused = true)]
async fn a_parked_run_a_recovery_of_this_life_ends_frees_its_sessions_slot() {
    use makalog::runtime::{read_open_runs, Listing, IDLE_KEPT};
    let (t, _owner, manager) = scripted(asks);
    manager.recover_interrupted_sessions().expect("start");
    let input = makalog::runtime::TurnInput {
        turn_id: Some(PARKED.into()),
        ..support::turns::text("go")
    };
    let mut turn = manager.send_message("s", input).await.expect("send");
    while turn.events.recv().await.is_some() {}
    let parked = turn.finish().await.expect("the turn");
    assert_eq!(parked.status, "waiting_for_user");
    let report = manager.recover_interrupted_sessions().expect("mid-life");
    let ended: Vec<&str> = report.recovered.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ended, [parked.run_id.as_str()], "the parked run ended");
    for n in 0..=IDLE_KEPT {
        let id = format!("other-{n}");
        manager
            .create_session(json!({"id": id, "backend": "fake", "model": "m"}))
            .expect("session");
        let turn = manager
            .send_message(&id, support::turns::text("hi"))
            .await
            .expect("send");
        turn.finish().await.expect("turn");
    }
    let storage = makalog::storage::RealStorage::new(t.path().join("root"));
    let Listing::Open(named) = read_open_runs(&storage).expect("read") else {
        panic!("the file is whole");
    };
    assert_eq!(named.len(), IDLE_KEPT, "the idle sessions the file keeps");
    assert!(
        named.iter().all(|(session, _)| session != "s"),
        "the least recently used idle session is freed: {named:?}"
    );
}
