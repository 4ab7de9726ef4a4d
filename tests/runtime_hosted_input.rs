//! A hosted turn's admission names the session's turn before it (MAKA-MODEL §8
//! `previousRootTurnId`), as the original's ledger links its turns; a retry keeps the one its
//! admission named, whatever ran since, so it is compared on its payload alone.

mod support;

use makalog::runtime::TurnInput;
use serde_json::json;
use support::turns::{fixture, session};

fn input(turn: &str) -> TurnInput {
    TurnInput {
        turn_id: Some(turn.into()),
        text: "look at this".into(),
        execution: Some(json!({"kind": "external_message"})),
        ..TurnInput::default()
    }
}

/// A hosted turn's admission names the session's turn before it (MAKA-MODEL §8
/// `previousRootTurnId`, as the original's ledger links its fixture turns): none for the
/// first; the same on a retry, which is then the same work.
#[tokio::test(start_paused = true)]
async fn each_admission_names_the_turn_before_it() {
    let f = fixture();
    let s = session(&f);
    for turn in ["turn-1", "turn-2", "turn-3"] {
        let sent = f.manager.send_message(&s, input(turn)).await.expect("send");
        sent.finish().await.expect("the turn");
    }
    let stores = f.manager.stores();
    let previous = |turn: &str| {
        stores
            .runs
            .read_root_turn_admission(&s, turn)
            .expect("read")
            .expect("admitted")
            .value()["previousRootTurnId"]
            .clone()
    };
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
