//! Turns through the SessionManager and the fake backend (MAKA-MODEL §11–§12), on tokio's
//! paused clock: the write order of one turn, the streamed echo written as partials, a fact
//! seen once written, an abandoned turn, and a session without its backend. How turns end
//! otherwise (questions, error prompts, stops): `runtime_turn_endings.rs`.

mod support;

use makalog::event::RuntimeEvent;
use makalog::format::RecordKind;
use makalog::runtime::{SessionEvent, FAKE_ASK_USER_QUESTION_PROMPT};
use serde_json::{json, Value};
use support::turns::*;

#[tokio::test(start_paused = true)]
async fn a_turn_is_written_in_the_order_of_section_12_and_streams_the_echo() {
    let f = fixture();
    let s = session(&f);
    let mut turn = f
        .manager
        .send_message(&s, text("hello"))
        .await
        .expect("send");
    let mut deltas = Vec::new();
    while let Some(e) = turn.events.recv().await {
        if let SessionEvent::TextDelta { text, .. } = e {
            assert!(text.chars().count() <= 9, "{text:?}");
            deltas.push(text);
        }
    }
    let outcome = turn.finish().await.expect("turn");
    let want = "Fake backend received: hello\n\nThis proves the session stream, SQLite storage, \
                and renderer loop are connected.";
    assert_eq!(deltas.concat(), want);
    assert_eq!(
        (outcome.status.as_str(), outcome.summary.as_str()),
        ("completed", want)
    );
    let got = labels(&f.storage, &s);
    let opening = [
        "header:active",
        "run:created",
        "run_event:run_created",
        "event:system:invocation_opened",
        "message:user",
        "turn_state:running",
        "event:user:text",
        "header:active",
        "run_event:run_started",
        "run:running",
        "header:running",
    ];
    assert_eq!(got[..opening.len()], opening);
    let closing = [
        "event:model:text",
        "message:assistant",
        "terminal:completed",
        "run:completed",
        "run_event:run_completed",
        "turn_state:completed",
        "header:active",
    ];
    assert_eq!(got[got.len() - closing.len()..], closing);
    let partials = &got[opening.len()..got.len() - closing.len()];
    assert!(
        !partials.is_empty() && partials.iter().all(|l| l == "partial"),
        "{partials:?}"
    );
    assert!(
        partials.len() < deltas.len(),
        "deltas are coalesced: {} of {}",
        partials.len(),
        deltas.len()
    );
    let header = f
        .manager
        .stores()
        .sessions
        .read_session(&s)
        .expect("read")
        .expect("header");
    assert_eq!(header.value()["connectionLocked"], json!(true));
    assert_eq!(header.value()["hasUnread"], json!(true));
}

/// A long echo's deltas become many partial events, each taken by the strict path once
/// written (its bytes are what decoding them gives), together holding the whole text in
/// order, each under the id of the delta its text starts with.
#[tokio::test(start_paused = true)]
async fn a_long_echo_is_written_as_partials_that_hold_its_deltas_in_order() {
    let f = fixture();
    let s = session(&f);
    let prompt = "explain how the group commit shares one sync; ".repeat(12);
    let mut turn = f
        .manager
        .send_message(&s, text(&prompt))
        .await
        .expect("send");
    let mut deltas = Vec::new();
    while let Some(e) = turn.events.recv().await {
        if let SessionEvent::TextDelta { id, text, .. } = e {
            deltas.push((id, text));
        }
    }
    turn.finish().await.expect("turn");
    let partials: Vec<RuntimeEvent> = support::read_all(&*f.storage, &s)
        .expect("read")
        .iter()
        .filter(|r| r.kind == RecordKind::RuntimeEvent)
        .map(|r| {
            let json = std::str::from_utf8(&r.payload).expect("utf-8");
            let event = RuntimeEvent::decode(json).expect("event");
            assert_eq!(
                event.canonical_json(),
                json,
                "stored as the strict path prints it"
            );
            event
        })
        .filter(RuntimeEvent::partial)
        .collect();
    assert!(partials.len() >= 3, "{} partials", partials.len());
    let mut at = 0;
    let mut last_ts = 0.0;
    for p in &partials {
        for key in ["invocationId", "runId", "turnId", "sessionId"] {
            assert_eq!(p.value()[key], partials[0].value()[key], "{key}");
        }
        assert!(
            p.value()["ts"].is_u64() && p.ts() >= last_ts,
            "{}",
            p.value()["ts"]
        );
        last_ts = p.ts();
        let text = p.value()["content"]["text"].as_str().expect("text");
        assert_eq!(p.id(), deltas[at].0, "a partial takes its first delta's id");
        let mut joined = String::new();
        while joined.len() < text.len() {
            joined.push_str(&deltas[at].1);
            at += 1;
        }
        assert_eq!(joined, text);
        assert_eq!(p.value()["refs"], partials[0].value()["refs"]);
    }
    assert_eq!(at, deltas.len(), "every delta is in a partial");
}

/// The caller is handed a fact's event once the fact is durable: the text fact and its message
/// are in the log (each fact's batch is synced before its event is handed on) when the caller
/// sees the completed text. On two threads, so the caller reads the log while the stream task
/// goes on: a stream that handed events on before writing them fails this most times (two of
/// three runs against the stream before this rule).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_caller_sees_a_fact_once_it_is_written() {
    let f = fixture();
    let s = session(&f);
    let mut turn = f
        .manager
        .send_message(&s, text("hello"))
        .await
        .expect("send");
    let SessionEvent::TextComplete { id, .. } = events_until(&mut turn, "text_complete").await
    else {
        unreachable!()
    };
    let records = support::read_all(&*f.storage, &s).expect("read");
    let fact = records.iter().find(|r| {
        let v: Value = serde_json::from_slice(&r.payload).expect("json");
        r.kind == RecordKind::RuntimeEvent && v["id"] == json!(id) && v["partial"] == json!(false)
    });
    assert!(
        fact.is_some(),
        "the text fact {id} is written before it is shown"
    );
    let got = labels(&f.storage, &s);
    let fact = [
        "event:model:text".to_owned(),
        "message:assistant".to_owned(),
    ];
    assert!(got.windows(2).any(|w| w == fact), "{got:?}");
    turn.finish().await.expect("turn");
}

/// On tokio's paused clock: the wait after the abandon lets every task run until none can
/// (the clock moves only then), so nothing left running could write later unseen.
#[tokio::test(start_paused = true)]
async fn an_abandoned_turn_writes_nothing_more_and_is_left_for_recovery() {
    let f = fixture();
    let s = session(&f);
    let mut turn = f
        .manager
        .send_message(&s, text(FAKE_ASK_USER_QUESTION_PROMPT))
        .await
        .expect("send");
    events_until(&mut turn, "user_question_request").await;
    let before = labels(&f.storage, &s).len();
    turn.abandon().await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let stores = f.manager.stores();
    let run = stores
        .runs
        .list_session_runs(&s)
        .expect("runs")
        .pop()
        .expect("a run");
    assert_eq!(run.status(), "waiting_for_user");
    assert!(
        labels(&f.storage, &s).len() <= before + 3,
        "only the wait's own writes"
    );
    let report = f.manager.recover_interrupted_sessions().expect("recover");
    assert_eq!(report.recovered.len(), 1);
    assert_eq!(report.recovered[0].recovery_reason, "stale_user_wait");
}

#[tokio::test(start_paused = true)]
async fn a_session_whose_backend_is_not_registered_gets_no_run() {
    let f = fixture();
    let s = f
        .manager
        .create_session(json!({"backend": "ai-sdk", "cwd": "/work"}))
        .expect("session")
        .id()
        .to_owned();
    let before = labels(&f.storage, &s);
    match f.manager.send_message(&s, text("hello")).await {
        Err(makalog::Error::InvalidInput(why)) => assert!(why.contains("ai-sdk"), "{why}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a turn without a backend"),
    }
    assert_eq!(labels(&f.storage, &s), before, "nothing written");
    assert!(f
        .manager
        .stores()
        .runs
        .list_session_runs(&s)
        .expect("runs")
        .is_empty());
}
