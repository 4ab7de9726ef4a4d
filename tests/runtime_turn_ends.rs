//! What a turn's end states beside its status, as the original's own ledger states it
//! (`../shared/compat/maka-sqlite`: its failed network turn's run says `failureMessage:
//! "Deterministic network failure"`; its `turn_state`s say `partialOutputRetained: true` for
//! the turns that answered, `false` for the others): a run an error failed carries the
//! error's message (MAKA-MODEL §7, step 2 of the terminal commit); a turn that put out an
//! answer or a tool's result kept its output; a run recovery failed carries no message.

mod support;

use makalog::runtime::{FAKE_ASK_USER_QUESTION_PROMPT, FAKE_ERROR_PROMPT_PREFIX};
use serde_json::{json, Value};
use support::turns::{fixture, session, text};

fn turn_state(f: &support::turns::Fixture, s: &str, turn: &str) -> Value {
    support::stores::latest_turn_state(f.manager.stores(), s, Some(turn))
}

#[tokio::test(start_paused = true)]
async fn a_turns_end_states_its_failure_message_and_whether_its_output_was_retained() {
    let f = fixture();
    let s = session(&f);
    let prompts = [
        ("done", "hello".to_owned()),
        ("failed", format!("{FAKE_ERROR_PROMPT_PREFIX}network")),
        ("odd", format!("{FAKE_ERROR_PROMPT_PREFIX}disk")),
    ];
    for (turn, prompt) in &prompts {
        let mut input = text(prompt);
        input.turn_id = Some((*turn).into());
        let sent = f.manager.send_message(&s, input).await.expect("send");
        sent.finish().await.expect("the turn");
    }
    let mut stopped = text(FAKE_ASK_USER_QUESTION_PROMPT);
    stopped.turn_id = Some("stopped".into());
    let mut sent = f.manager.send_message(&s, stopped).await.expect("send");
    while let Some(e) = sent.events.recv().await {
        if e.type_name() == "user_question_request" {
            break;
        }
    }
    assert!(f.manager.stop(&s, "stop_button").expect("stop"));
    sent.finish().await.expect("the turn");

    let runs = f.manager.stores().runs.list_session_runs(&s).expect("runs");
    let run = |turn: &str| {
        runs.iter()
            .find(|r| r.value()["turnId"] == json!(turn))
            .expect("the turn's run")
            .value()
            .clone()
    };
    let failed = run("failed");
    assert_eq!(
        (&failed["failureClass"], &failed["failureMessage"]),
        (&json!("network"), &json!("Deterministic network failure"))
    );
    let odd = run("odd");
    assert_eq!(odd["failureMessage"], json!("Operation failed"), "{odd}");
    for turn in ["done", "stopped"] {
        assert!(run(turn).get("failureMessage").is_none(), "{turn}");
    }
    for (turn, retained) in [
        ("done", true),
        ("failed", false),
        ("odd", false),
        ("stopped", false),
    ] {
        assert_eq!(
            turn_state(&f, &s, turn)["partialOutputRetained"],
            json!(retained),
            "{turn}"
        );
    }
}
