//! MAKA-MODEL §12 and DESIGN's durability contract: a terminal event is always durable, and a
//! fact reaches the caller only once durable. The caller that sees a turn's terminal event
//! (its `abort`, or its `complete`) finds the run already ended in the ledger.

mod support;

use makalog::runtime::{
    Backend, BackendRegistry, SendInput, SessionEvent, SessionManager, Sources, TurnInput,
    FAKE_ASK_USER_QUESTION_PROMPT,
};
use makalog::store::open_execution_stores_for_write;
use serde_json::json;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_terminal_event_reaches_the_caller_only_after_its_run_ended_durably() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let manager = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )
    .expect("manager");
    manager
        .create_session(json!({"id": "s", "backend": "fake", "model": "m"}))
        .expect("session");
    let turns = [
        (FAKE_ASK_USER_QUESTION_PROMPT, true),
        ("hello there", false),
    ];
    for (n, (prompt, stop)) in turns.into_iter().cycle().take(60).enumerate() {
        // The turn's own run, by its id: two runs begun in one ms list in either order.
        let run_id = format!("run-{n}");
        let input = TurnInput {
            text: prompt.into(),
            run_id: Some(run_id.clone()),
            ..TurnInput::default()
        };
        let mut turn = manager.send_message("s", input).await.expect("send");
        let mut terminals = 0;
        while let Some(e) = turn.events.recv().await {
            match e.type_name() {
                "user_question_request" if stop => {
                    assert!(manager.stop("s", "stop_button").expect("stop"));
                }
                "abort" | "complete" => {
                    terminals += 1;
                    let run = stores.runs.read_run("s", &run_id).expect("the turn's run");
                    assert_ne!(
                        run.status(),
                        "running",
                        "{prompt:?}: `{}` reached the caller before the run ended",
                        e.type_name()
                    );
                }
                _ => {}
            }
        }
        assert!(terminals > 0, "{prompt:?}: the turn ended");
        turn.finish().await.expect("finish");
    }
}

/// A backend that ends its turn with `complete` and keeps its stream open a while after.
struct Lingering;

impl Backend for Lingering {
    fn kind(&self) -> &str {
        "lingering"
    }
    fn send(&self, input: SendInput) -> tokio::sync::mpsc::Receiver<SessionEvent> {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            let complete = SessionEvent::Complete {
                id: "complete-1".into(),
                turn_id: input.turn_id,
                ts: 1.0,
                stop_reason: "end_turn".into(),
                context_budget_exhausted_detail: None,
            };
            let _ = tx.send(complete).await;
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        });
        rx
    }
    fn stop(&self) {}
}

/// The same with a backend whose stream stays open after its terminal event: the event waits
/// for the terminal commit instead of going on at once.
#[tokio::test(start_paused = true)]
async fn a_terminal_event_waits_for_its_commit_while_the_backend_lingers() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let mut registry = BackendRegistry::default();
    registry.register("fake", |_| Arc::new(Lingering));
    let manager =
        SessionManager::new(stores.clone(), registry, Sources::system()).expect("manager");
    manager
        .create_session(json!({"id": "s", "backend": "fake", "model": "m"}))
        .expect("session");
    let input = TurnInput {
        text: "hello".into(),
        ..TurnInput::default()
    };
    let mut turn = manager.send_message("s", input).await.expect("send");
    let first = turn.events.recv().await.expect("an event");
    assert_eq!(first.type_name(), "complete");
    let runs = stores.runs.list_session_runs("s").expect("runs");
    assert_eq!(
        runs[0].status(),
        "completed",
        "`complete` reached the caller before the run ended"
    );
    turn.finish().await.expect("finish");
}
