//! A hosted turn's admission names the session's turn before it (MAKA-MODEL §8
//! `previousRootTurnId`), as the original's ledger links its turns; a retry keeps the one its
//! admission named, whatever ran since, so it is compared on its payload alone.

mod support;

use makalog::runtime::TurnInput;
use serde_json::{json, Value};
use support::turns::{fixture, session, Fixture};

fn input(turn: &str) -> TurnInput {
    TurnInput {
        turn_id: Some(turn.into()),
        text: "look at this".into(),
        execution: Some(json!({"kind": "external_message"})),
        ..TurnInput::default()
    }
}

/// Runs hosted turn `turn` of session `s` to its end.
async fn run_turn(f: &Fixture, s: &str, turn: &str) {
    let sent = f.manager.send_message(s, input(turn)).await.expect("send");
    sent.finish().await.expect("the turn");
}

/// The turn hosted turn `turn`'s admission names as the one before it.
fn previous(f: &Fixture, s: &str, turn: &str) -> Value {
    f.manager
        .stores()
        .runs
        .read_root_turn_admission(s, turn)
        .expect("read")
        .expect("admitted")
        .value()["previousRootTurnId"]
        .clone()
}

/// A hosted turn's admission names the session's turn before it (MAKA-MODEL §8
/// `previousRootTurnId`, as the original's ledger links its fixture turns): none for the
/// first; the same on a retry, which is then the same work.
#[tokio::test(start_paused = true)]
async fn each_admission_names_the_turn_before_it() {
    let f = fixture();
    let s = session(&f);
    for turn in ["turn-1", "turn-2", "turn-3"] {
        run_turn(&f, &s, turn).await;
    }
    let stores = f.manager.stores();
    let previous = |turn: &str| previous(&f, &s, turn);
    assert_eq!(
        [previous("turn-1"), previous("turn-2"), previous("turn-3")],
        [json!(null), json!("turn-1"), json!("turn-2")]
    );
    // turn-2 again, after turn-3: the same admission (not other work), whose run exists, so
    // nothing runs; it still names turn-1.
    let runs = stores.runs.list_session_runs(&s).expect("runs").len();
    let again = f.manager.send_message(&s, input("turn-2")).await;
    assert!(
        matches!(&again, Err(makalog::Error::InvalidRecord { field, .. }) if field == "runId"),
        "{:?}",
        again.err()
    );
    assert_eq!(previous("turn-2"), json!("turn-1"));
    assert_eq!(stores.runs.list_session_runs(&s).expect("runs").len(), runs);
}

/// A message of an older turn written after newer turns ran (a late recovery's `turn_state`,
/// ending a run a restart could not end at once) does not make that older turn the one a new
/// admission names: the turn before a new one is the session's latest turn to start.
#[tokio::test(start_paused = true)]
async fn a_late_message_of_an_older_turn_does_not_become_the_turn_before() {
    let f = fixture();
    let s = session(&f);
    for turn in ["turn-1", "turn-2"] {
        run_turn(&f, &s, turn).await;
    }
    let stores = f.manager.stores();
    stores
        .sessions
        .append_message(
            &s,
            json!({"type": "turn_state", "id": "late", "turnId": "turn-1", "ts": 9,
                   "status": "failed", "partialOutputRetained": false,
                   "errorClass": "app_restarted"}),
        )
        .expect("a late turn_state of turn-1");
    run_turn(&f, &s, "turn-3").await;
    assert_eq!(previous(&f, &s, "turn-3"), json!("turn-2"));
}

/// A run of an older turn whose opening left only its header durable, ended late by a
/// recovery (its first lifecycle event the late `run_failed`), did not start after the newer
/// turns: the turn before a new one is the latest turn whose run started.
#[tokio::test(start_paused = true)]
async fn a_run_ended_late_without_a_start_does_not_become_the_turn_before() {
    let f = fixture();
    let s = session(&f);
    let stores = f.manager.stores();
    stores
        .runs
        .create_run(support::stores::run_header(&s, "r0", "running"))
        .expect("a run whose opening was cut after its header");
    run_turn(&f, &s, "turn-1").await;
    stores
        .runs
        .append_event(json!({"type": "run_failed", "id": "late", "runId": "r0",
                             "sessionId": s, "turnId": "turn-r0", "ts": 9}))
        .expect("a late recovery's run_failed");
    run_turn(&f, &s, "turn-2").await;
    assert_eq!(previous(&f, &s, "turn-2"), json!("turn-1"));
}
