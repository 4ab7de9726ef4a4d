//! What a hosted turn's records keep of what was sent: its attachments (MAKA-MODEL §6: the
//! user message's `attachments`; §8: the admission's normalized input), not only their count,
//! so that the turn sent again with other attachments is other work; and the turn before it
//! (§8 `previousRootTurnId`).

mod support;

use makalog::runtime::TurnInput;
use serde_json::json;
use support::turns::{fixture, session};

fn input(turn: &str, attachments: &[&str]) -> TurnInput {
    TurnInput {
        turn_id: Some(turn.into()),
        text: "look at these".into(),
        attachments: attachments.iter().map(|a| a.to_string()).collect(),
        execution: Some(json!({"kind": "external_message"})),
        ..TurnInput::default()
    }
}

#[tokio::test(start_paused = true)]
async fn attachments_are_kept_in_the_user_message_and_the_admission() {
    let f = fixture();
    let s = session(&f);
    let sent = f
        .manager
        .send_message(&s, input("turn-1", &["a.png", "notes.md"]))
        .await
        .expect("send");
    let outcome = sent.finish().await.expect("the turn");
    assert_eq!(outcome.status, "completed");
    let stores = f.manager.stores();
    let user = stores
        .sessions
        .read_messages(&s, Some("turn-1"))
        .expect("messages")
        .into_iter()
        .find(|m| m.message_type() == "user")
        .expect("the user message");
    assert_eq!(user.value()["attachments"], json!(["a.png", "notes.md"]));
    let admission = stores
        .runs
        .read_root_turn_admission(&s, "turn-1")
        .expect("read")
        .expect("admitted");
    assert_eq!(
        admission.value()["normalizedInput"],
        json!({"text": "look at these", "attachments": ["a.png", "notes.md"]})
    );

    // The same turn again with other attachments is other work: refused, nothing run.
    let runs = stores.runs.list_session_runs(&s).expect("runs").len();
    let again = f
        .manager
        .send_message(&s, input("turn-1", &["other.png"]))
        .await;
    assert!(
        matches!(again, Err(makalog::Error::IdentityConflict { .. })),
        "{:?}",
        again.err()
    );
    assert_eq!(stores.runs.list_session_runs(&s).expect("runs").len(), runs);

    // Without attachments the message and the input carry none.
    let plain = f
        .manager
        .send_message(&s, input("turn-2", &[]))
        .await
        .expect("send");
    plain.finish().await.expect("the turn");
    let user = stores
        .sessions
        .read_messages(&s, Some("turn-2"))
        .expect("messages")
        .into_iter()
        .find(|m| m.message_type() == "user")
        .expect("the user message");
    assert!(
        user.value().get("attachments").is_none(),
        "{}",
        user.value()
    );
}

/// A hosted turn's admission names the session's turn before it (MAKA-MODEL §8
/// `previousRootTurnId`, as the original's ledger links its fixture turns): none for the
/// first; the same on a retry, which is then the same work.
#[tokio::test(start_paused = true)]
async fn each_admission_names_the_turn_before_it() {
    let f = fixture();
    let s = session(&f);
    for turn in ["turn-1", "turn-2", "turn-3"] {
        let sent = f
            .manager
            .send_message(&s, input(turn, &[]))
            .await
            .expect("send");
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
    // turn-3 again: the same admission (not other work), whose run exists, so nothing runs.
    let runs = stores.runs.list_session_runs(&s).expect("runs").len();
    let again = f.manager.send_message(&s, input("turn-3", &[])).await;
    assert!(
        matches!(&again, Err(makalog::Error::InvalidRecord { field, .. }) if field == "runId"),
        "{:?}",
        again.err()
    );
    assert_eq!(previous("turn-3"), json!("turn-2"));
    assert_eq!(stores.runs.list_session_runs(&s).expect("runs").len(), runs);
}
