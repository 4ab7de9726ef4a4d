//! A backend is the host's code, not the ledger's: one that misbehaves must not leave a run
//! `running` in this life, hold its session's turns, or break the runtime's other turns. Each
//! test drives a backend that does one thing wrong (MAKA-MODEL §11–§12), on tokio's paused
//! clock, and checks that the turn ends with exactly one terminal fact and the session takes
//! its next turn.

mod support;

use makalog::runtime::{
    Backend, BackendRegistry, ExecutionComposition, SendInput, SessionEvent, SessionManager, Turn,
    TurnInput, TurnOutcome, FAKE_ASK_USER_QUESTION_PROMPT,
};
use makalog::store::open_execution_stores_for_write;
use serde_json::json;
use std::sync::Arc;
use support::turns::{labels, ticking_sources};

/// What the scripted backend (registered as kind `ai-sdk`, session `s`'s) does wrong.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    /// Streams a delta, then keeps its stream open for good and ignores `stop`.
    DeafToStop,
    /// Ends its turn with `complete`, then keeps its stream open for good.
    OpenAfterComplete,
    /// Its factory panics: the backend is never made.
    PanicInFactory,
    /// Panics in `send`.
    PanicInSend,
    /// Streams a delta, then panics in `stop` (and keeps its stream open).
    PanicInStop,
    /// Ends its turn with a `complete` that repeats the id of its text's event.
    RepeatedTerminalId,
    /// Streams a delta; a stop closes its stream without `abort` or `complete`.
    ClosesOnStop,
    /// Streams a delta and ignores `stop`; `dispose` closes its stream without an ending.
    ClosesOnDispose,
}

/// A backend doing `Fault` wrong; the stream's sender it keeps (the closing faults), so that
/// dropping it closes the stream.
struct Scripted(
    Fault,
    std::sync::Mutex<Option<tokio::sync::mpsc::Sender<SessionEvent>>>,
);

impl Scripted {
    fn close_stream(&self) {
        self.1.lock().expect("sender").take();
    }
}

impl Backend for Scripted {
    fn kind(&self) -> &str {
        "scripted"
    }
    fn send(&self, input: SendInput) -> tokio::sync::mpsc::Receiver<SessionEvent> {
        assert!(self.0 != Fault::PanicInSend, "the backend panics in send");
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let turn_id = input.turn_id;
        let message = |id: &str| SessionEvent::TextComplete {
            id: id.into(),
            turn_id: turn_id.clone(),
            ts: 2.0,
            message_id: format!("m-{turn_id}"),
            text: "done".into(),
        };
        let delta = SessionEvent::TextDelta {
            id: format!("d-{turn_id}"),
            turn_id: turn_id.clone(),
            ts: 1.0,
            message_id: format!("m-{turn_id}"),
            text: "partly".into(),
            start_offset: None,
        };
        let complete = |id: &str| SessionEvent::Complete {
            id: id.into(),
            turn_id: turn_id.clone(),
            ts: 3.0,
            stop_reason: "end_turn".into(),
            context_budget_exhausted_detail: None,
        };
        let script = match self.0 {
            Fault::DeafToStop
            | Fault::PanicInStop
            | Fault::ClosesOnStop
            | Fault::ClosesOnDispose => {
                vec![delta]
            }
            Fault::OpenAfterComplete => {
                vec![
                    message(&format!("t-{turn_id}")),
                    complete(&format!("c-{turn_id}")),
                ]
            }
            Fault::RepeatedTerminalId => {
                let id = format!("t-{turn_id}");
                vec![message(&id), complete(&id)]
            }
            Fault::PanicInSend | Fault::PanicInFactory => unreachable!(),
        };
        let linger = matches!(
            self.0,
            Fault::DeafToStop | Fault::PanicInStop | Fault::OpenAfterComplete
        );
        if matches!(self.0, Fault::ClosesOnStop | Fault::ClosesOnDispose) {
            *self.1.lock().expect("sender") = Some(tx.clone());
        }
        tokio::spawn(async move {
            for e in script {
                let _ = tx.send(e).await;
            }
            if linger {
                // Holds the stream open until the turn stops reading it.
                tx.closed().await;
            }
        });
        rx
    }
    fn stop(&self) {
        assert!(self.0 != Fault::PanicInStop, "the backend panics in stop");
        if self.0 == Fault::ClosesOnStop {
            self.close_stream();
        }
    }
    fn dispose(&self) {
        if self.0 == Fault::ClosesOnDispose {
            self.close_stream();
        }
    }
}

struct Fixture {
    _t: tempfile::TempDir,
    storage: Arc<makalog::storage::RealStorage>,
    _owner: makalog::root::Owner,
    manager: SessionManager,
}

fn fixture(fault: Fault) -> Fixture {
    let (t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let mut registry = BackendRegistry::with_fake();
    registry.register("ai-sdk", move |_| {
        assert!(fault != Fault::PanicInFactory, "the factory panics");
        Arc::new(Scripted(fault, Default::default()))
    });
    let manager = SessionManager::new(stores, registry, ticking_sources()).expect("manager");
    for (id, backend) in [("s", "ai-sdk"), ("other", "fake")] {
        manager
            .create_session(json!({"id": id, "backend": backend, "model": "m"}))
            .expect("session");
    }
    Fixture {
        _t: t,
        storage,
        _owner: owner,
        manager,
    }
}

fn text(t: &str) -> TurnInput {
    TurnInput {
        text: t.into(),
        ..TurnInput::default()
    }
}

/// The session's runs (by their order in the log) and how many terminal facts each has.
fn ended_runs(f: &Fixture, session: &str) -> Vec<(String, usize)> {
    let stores = f.manager.stores();
    let mut runs = stores.runs.list_session_runs(session).expect("runs");
    runs.sort_by(|a, b| {
        a.value()["createdAt"]
            .as_f64()
            .partial_cmp(&b.value()["createdAt"].as_f64())
            .expect("times")
    });
    runs.iter()
        .map(|r| {
            let terminal = stores
                .runs
                .read_events(session, r.run_id())
                .expect("events")
                .iter()
                .filter(|(_, e)| {
                    matches!(
                        e.event_type(),
                        "run_completed" | "run_failed" | "run_cancelled"
                    )
                })
                .count();
            (r.status().to_owned(), terminal)
        })
        .collect()
}

/// A whole turn of `session`: sent, then read to its end.
async fn whole_turn(f: &Fixture, session: &str, prompt: &str) -> TurnOutcome {
    let turn = f.manager.send_message(session, text(prompt)).await;
    turn.expect("send").finish().await.expect("the turn ends")
}

/// Every event the turn's stream hands the caller from here on, then its outcome.
async fn read_to_end(mut turn: Turn) -> (Vec<SessionEvent>, TurnOutcome) {
    let mut seen = Vec::new();
    while let Some(e) = turn.events.recv().await {
        seen.push(e);
    }
    (seen, turn.finish().await.expect("the turn ends"))
}

/// How the caller's stream ended: its last two events, named with their reason or code, and
/// how many `complete` events it had in all.
fn told_ending(seen: &[SessionEvent]) -> (Vec<String>, usize) {
    let name = |e: &SessionEvent| match e {
        SessionEvent::Error { code, .. } => format!("error:{}", code.as_deref().unwrap_or("")),
        SessionEvent::Abort { reason, .. } => format!("abort:{reason}"),
        SessionEvent::Complete { stop_reason, .. } => format!("complete:{stop_reason}"),
        other => other.type_name().to_owned(),
    };
    let last = seen[seen.len().saturating_sub(2)..]
        .iter()
        .map(name)
        .collect();
    let completes = seen
        .iter()
        .filter(|e| matches!(e, SessionEvent::Complete { .. }))
        .count();
    (last, completes)
}

/// A turn of `session` sent and streaming: its first event (a delta) read.
async fn streaming_turn(f: &Fixture, session: &str, prompt: &str) -> Turn {
    let mut turn = f
        .manager
        .send_message(session, text(prompt))
        .await
        .expect("send");
    let first = turn.events.recv().await.expect("a delta");
    assert_eq!(first.type_name(), "text_delta");
    turn
}

/// The abort source of the session's only run.
fn abort_source(f: &Fixture, session: &str) -> serde_json::Value {
    let runs = f
        .manager
        .stores()
        .runs
        .list_session_runs(session)
        .expect("runs");
    assert_eq!(runs.len(), 1);
    runs[0].value()["abortSource"].clone()
}

/// The fake session `other` still takes a turn: the runtime's locks were not broken.
async fn other_session_still_works(f: &Fixture) {
    let outcome = whole_turn(f, "other", "hello").await;
    assert_eq!(outcome.status, "completed");
}

#[tokio::test(start_paused = true)]
async fn a_backend_deaf_to_stop_has_its_turn_ended_cancelled_after_a_grace() {
    let f = fixture(Fault::DeafToStop);
    let turn = streaming_turn(&f, "s", "one").await;
    assert!(f.manager.stop("s", "stop_button").expect("stop"));
    let (seen, outcome) = read_to_end(turn).await;
    assert_eq!(outcome.status, "cancelled");
    // The caller is told the ending the runtime made, as a stopped backend tells it.
    let told = (
        vec!["abort:user_stop".into(), "complete:user_stop".into()],
        1,
    );
    assert_eq!(told_ending(&seen), told);
    assert_eq!(ended_runs(&f, "s"), [("cancelled".to_owned(), 1)]);
    let log = labels(&f.storage, "s");
    assert!(log.contains(&"turn_state:aborted".to_owned()), "{log:?}");
    // The session's next turn is not held by the first.
    let next = streaming_turn(&f, "s", "two").await;
    assert!(f.manager.stop("s", "stop_button").expect("stop"));
    assert_eq!(next.finish().await.expect("turn").status, "cancelled");
}

#[tokio::test(start_paused = true)]
async fn a_backend_that_keeps_its_stream_open_after_complete_does_not_hold_the_session() {
    let f = fixture(Fault::OpenAfterComplete);
    for prompt in ["one", "two"] {
        let outcome = whole_turn(&f, "s", prompt).await;
        assert_eq!(outcome.status, "completed");
        assert_eq!(outcome.summary, "done");
    }
    assert_eq!(
        ended_runs(&f, "s"),
        [("completed".to_owned(), 1), ("completed".to_owned(), 1)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_backend_panicking_in_send_fails_the_turn_and_breaks_nothing_else() {
    let f = fixture(Fault::PanicInSend);
    let turn = f
        .manager
        .send_message("s", text("one"))
        .await
        .expect("send");
    let (seen, outcome) = read_to_end(turn).await;
    assert_eq!(outcome.status, "failed");
    let told = (
        vec![
            "error:missing_terminal_event".into(),
            "complete:error".into(),
        ],
        1,
    );
    assert_eq!(told_ending(&seen), told);
    assert_eq!(
        outcome.failure_class.as_deref(),
        Some("missing_terminal_event")
    );
    assert_eq!(ended_runs(&f, "s"), [("failed".to_owned(), 1)]);
    assert!(f.manager.stop("s", "stop_button").is_ok());
    other_session_still_works(&f).await;
}

#[tokio::test(start_paused = true)]
async fn a_backend_factory_panicking_is_the_calls_error_and_starts_no_run() {
    let f = fixture(Fault::PanicInFactory);
    let Err(e) = f.manager.send_message("s", text("one")).await else {
        panic!("a turn began without a backend");
    };
    assert!(e.to_string().contains("panicked"), "{e}");
    assert!(ended_runs(&f, "s").is_empty());
    other_session_still_works(&f).await;
}

#[tokio::test(start_paused = true)]
async fn a_backend_panicking_in_stop_has_its_turn_ended_and_breaks_nothing_else() {
    let f = fixture(Fault::PanicInStop);
    let turn = streaming_turn(&f, "s", "one").await;
    assert!(f
        .manager
        .stop("s", "stop_button")
        .expect("the stop is recorded"));
    let outcome = turn.finish().await.expect("the turn ends");
    assert_eq!(outcome.status, "cancelled");
    assert_eq!(ended_runs(&f, "s"), [("cancelled".to_owned(), 1)]);
    other_session_still_works(&f).await;
}

#[tokio::test(start_paused = true)]
async fn a_terminal_event_the_ledger_refuses_ends_the_run_failed_not_running() {
    let f = fixture(Fault::RepeatedTerminalId);
    let turn = f
        .manager
        .send_message("s", text("one"))
        .await
        .expect("send");
    let (seen, outcome) = read_to_end(turn).await;
    assert_eq!(outcome.status, "failed");
    // The backend's own `complete{end_turn}` is not handed on: the ledger refused it, and the
    // caller is told the failure that replaced it.
    let told = (
        vec![
            "error:invalid_terminal_event".into(),
            "complete:error".into(),
        ],
        1,
    );
    assert_eq!(told_ending(&seen), told);
    assert_eq!(
        outcome.failure_class.as_deref(),
        Some("invalid_terminal_event")
    );
    assert_eq!(ended_runs(&f, "s"), [("failed".to_owned(), 1)]);
    let log = labels(&f.storage, "s");
    let terminals = log.iter().filter(|l| l.starts_with("terminal:")).count();
    assert_eq!(terminals, 1, "{log:?}");
    assert!(log.contains(&"turn_state:failed".to_owned()), "{log:?}");
}

#[tokio::test(start_paused = true)]
async fn dispose_stops_the_turns_in_flight_first() {
    let f = fixture(Fault::DeafToStop);
    let mut turn = f
        .manager
        .send_message("other", text(FAKE_ASK_USER_QUESTION_PROMPT))
        .await
        .expect("send");
    loop {
        let e = turn.events.recv().await.expect("the question");
        if e.type_name() == "user_question_request" {
            break;
        }
    }
    f.manager.dispose().expect("dispose");
    let outcome = turn.finish().await.expect("the turn ends");
    assert_eq!(outcome.status, "cancelled");
    assert_eq!(ended_runs(&f, "other"), [("cancelled".to_owned(), 1)]);
    assert_eq!(abort_source(&f, "other"), json!("runtime_disposed"));
}

/// A stop ends a turn aborted however the backend ends it: here by closing its stream without
/// an ending, which alone would be a failure (`missing_terminal_event`).
#[tokio::test(start_paused = true)]
async fn a_stopped_turn_whose_stream_just_closes_ends_cancelled() {
    let f = fixture(Fault::ClosesOnStop);
    let turn = streaming_turn(&f, "s", "one").await;
    assert!(f.manager.stop("s", "stop_button").expect("stop"));
    let outcome = turn.finish().await.expect("the turn ends");
    assert_eq!(
        (outcome.status.as_str(), outcome.failure_class),
        ("cancelled", None)
    );
    assert_eq!(ended_runs(&f, "s"), [("cancelled".to_owned(), 1)]);
    assert_eq!(abort_source(&f, "s"), json!("stop_button"));
}

#[tokio::test(start_paused = true)]
async fn dispose_ends_a_turn_cancelled_when_the_backend_closes_its_stream() {
    let f = fixture(Fault::ClosesOnDispose);
    let turn = streaming_turn(&f, "s", "one").await;
    f.manager.dispose().expect("dispose");
    let outcome = turn.finish().await.expect("the turn ends");
    assert_eq!(outcome.status, "cancelled");
    assert_eq!(ended_runs(&f, "s"), [("cancelled".to_owned(), 1)]);
    assert_eq!(abort_source(&f, "s"), json!("runtime_disposed"));
}

/// A runtime disposed of starts no turn: a backend made after `dispose` would outlive it.
#[tokio::test(start_paused = true)]
async fn a_disposed_runtime_refuses_new_turns_and_writes_nothing() {
    let f = fixture(Fault::DeafToStop);
    f.manager.dispose().expect("dispose");
    let before = labels(&f.storage, "other");
    let Err(e) = f.manager.send_message("other", text("hello")).await else {
        panic!("a turn began on a disposed runtime");
    };
    assert!(e.to_string().contains("disposed"), "{e}");
    assert_eq!(labels(&f.storage, "other"), before);
    assert!(ended_runs(&f, "other").is_empty());
}

/// A turn that fails to start (here its backend's factory panics) leaves no stop behind: a
/// stop naming it stops nothing, and the session, with neither a backend nor a turn starting,
/// has nothing to stop.
#[tokio::test(start_paused = true)]
async fn a_turn_that_failed_to_start_leaves_no_stop_behind() {
    let f = fixture(Fault::PanicInFactory);
    let input = TurnInput {
        turn_id: Some("t-1".into()),
        ..text("one")
    };
    assert!(f.manager.send_message("s", input).await.is_err());
    assert!(!f
        .manager
        .stop_turn("s", "t-1", "stop_button")
        .expect("stop"));
    assert!(!f.manager.stop("s", "stop_button").expect("stop"));
}

/// A composition shut down while turns run waits for the turns its dispose stopped, then
/// closes its stores: one of a backend that ends on the stop, and one of a backend deaf to it
/// (given up on after the stream's grace, tokio's clock). Both runs end cancelled with abort
/// source `runtime_disposed`, and the stores reopen clean with them ended. `close` alone fails
/// "still in use" while a turn's task holds the stores; before `shutdown` a caller had no way
/// to wait for them.
#[tokio::test(start_paused = true)]
async fn a_composition_shut_down_mid_turn_waits_for_its_turns_then_closes() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let mut registry = BackendRegistry::with_fake();
    registry.register("ai-sdk", |_| {
        Arc::new(Scripted(Fault::DeafToStop, Default::default()))
    });
    let c = ExecutionComposition::open(&owner, registry, ticking_sources()).expect("open");
    for (id, backend) in [("s", "ai-sdk"), ("other", "fake")] {
        c.manager()
            .create_session(json!({"id": id, "backend": backend, "model": "m"}))
            .expect("session");
    }
    let mut deaf = c
        .manager()
        .send_message("s", text("one"))
        .await
        .expect("send");
    assert_eq!(
        deaf.events.recv().await.expect("a delta").type_name(),
        "text_delta"
    );
    let mut asking = c
        .manager()
        .send_message("other", text(FAKE_ASK_USER_QUESTION_PROMPT))
        .await
        .expect("send");
    while asking
        .events
        .recv()
        .await
        .expect("the question")
        .type_name()
        != "user_question_request"
    {}
    c.shutdown()
        .await
        .expect("shut down with the stores closed");
    for turn in [deaf, asking] {
        let outcome = turn.finish().await.expect("the turn ended");
        assert_eq!(outcome.status, "cancelled");
    }
    let stores = open_execution_stores_for_write(&owner).expect("reopened");
    for session in ["s", "other"] {
        let runs = stores.runs.list_session_runs(session).expect("runs");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].status(), "cancelled", "{session}");
        assert_eq!(runs[0].value()["abortSource"], json!("runtime_disposed"));
    }
    stores.close().expect("close");
}
