//! A shutdown waits for every turn that began before it: also one still writing its opening
//! (§12 steps 0–6) when the shutdown came, whose task is not spawned yet. A caller that does
//! not read its turn cannot hold a stop or a shutdown for good; one that reads late still gets
//! every event.

mod support;

use makalog::runtime::{BackendRegistry, ExecutionComposition, Sources, TurnInput};
use serde_json::json;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Waker};

/// A clock that, once armed, stops at its next reading until released: a turn's opening
/// reads the clock, so an armed clock holds a turn mid-opening.
struct Gate {
    armed: AtomicBool,
    entered: Mutex<mpsc::Sender<()>>,
    release: Mutex<mpsc::Receiver<()>>,
}

impl Gate {
    fn read(&self) -> f64 {
        if self.armed.swap(false, Ordering::SeqCst) {
            self.entered
                .lock()
                .expect("entered")
                .send(())
                .expect("test waits");
            self.release
                .lock()
                .expect("release")
                .recv()
                .expect("released");
        }
        1_780_000_000_000.0
    }
}

/// The turn holds its session from the start of its opening: `shutdown` called while the
/// opening is being written does not return until that turn has ended and let go of the
/// runtime (before, it returned at once, the turn not yet counted, and the stores could close
/// under the opening). The turn is stopped by the shutdown's dispose, and its run is ended
/// in the ledger when the shutdown returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_waits_for_a_turn_still_writing_its_opening() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let gate = Arc::new(Gate {
        armed: AtomicBool::new(false),
        entered: Mutex::new(entered_tx),
        release: Mutex::new(release_rx),
    });
    let clock = gate.clone();
    let ids = Sources::system();
    let sources = Sources::new(move || ids.new_id(), move || clock.read());
    let c = ExecutionComposition::open(&owner, BackendRegistry::with_instant_fake(), sources)
        .expect("open");
    c.manager()
        .create_session(json!({"id": "s", "backend": "fake", "model": "m"}))
        .expect("session");

    gate.armed.store(true, Ordering::SeqCst);
    let manager = c.manager().clone();
    let sending = tokio::spawn(async move {
        let input = TurnInput {
            text: "hello".into(),
            turn_id: Some("t1".into()),
            ..TurnInput::default()
        };
        let sent = manager.send_message("s", input).await;
        let ended = match sent {
            Ok(mut turn) => {
                while turn.events.recv().await.is_some() {}
                turn.finish().await.map(|outcome| outcome.status)
            }
            Err(e) => Err(e),
        };
        drop(manager);
        ended
    });
    tokio::task::spawn_blocking(move || entered.recv())
        .await
        .expect("waiter")
        .expect("the opening read the clock");

    {
        let mut shutdown = std::pin::pin!(c.manager().shutdown());
        let first = shutdown
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        assert!(
            first.is_pending(),
            "shutdown returned while a turn was writing its opening"
        );
        release.send(()).expect("the opening waits");
        shutdown.await.expect("shut down");
    }
    let runs = c.stores().runs.list_session_runs("s").expect("runs");
    assert_eq!(runs.len(), 1, "the turn's opening was written");
    assert_eq!(
        runs[0].status(),
        "cancelled",
        "the turn was ended before shutdown returned"
    );
    assert_eq!(runs[0].value()["abortSource"], json!("runtime_disposed"));
    assert_eq!(sending.await.expect("task").expect("turn"), "cancelled");
    c.close().expect("close");
}

/// A caller that holds its turn and never reads it: once the turn's handed-on events fill
/// what the caller may fall behind by, the turn waits for it, as backpressure on the backend;
/// after a shutdown's stop, only for the stop's grace (the events the caller has no room for
/// are then dropped: the ledger holds what they meant). Before, the turn waited for the caller
/// for good, and so did the shutdown. On tokio's paused clock: a shutdown that cannot end lets
/// the clock run to the test's bound and fails it.
#[tokio::test(start_paused = true)]
async fn a_shutdown_ends_a_turn_whose_caller_does_not_read() {
    let f = support::turns::fixture();
    let s = support::turns::session(&f);
    // About 500 deltas, one a burst at the fake's pace: more than the caller may fall behind.
    let prompt = "a caller that never reads its events ".repeat(120);
    let turn = f
        .manager
        .send_message(&s, support::turns::text(&prompt))
        .await
        .expect("send");
    // Long enough for the fake to stream past what the caller may fall behind by.
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    let shut = tokio::time::timeout(std::time::Duration::from_secs(3600), f.manager.shutdown());
    shut.await
        .expect("shutdown ended before the bound")
        .expect("shut down");
    let outcome = turn.finish().await.expect("the turn ended");
    assert_eq!(outcome.status, "cancelled");
    let run = f.manager.stores().runs.list_session_runs(&s).expect("runs");
    assert_eq!(run.len(), 1);
    assert_eq!(run[0].status(), "cancelled");
    assert_eq!(run[0].value()["abortSource"], json!("runtime_disposed"));
}

/// A caller that fell behind and reads again a second after it stopped its turn gets every
/// event of the turn in order, with no gap, and the turn's ending (`abort`, then `complete`):
/// a stop drops nothing for a caller that makes room within the stop's grace (before, the
/// bursts that found no room once the stop came were dropped).
#[tokio::test(start_paused = true)]
async fn a_caller_behind_a_stopped_turn_still_gets_every_event() {
    let f = support::turns::fixture();
    let s = support::turns::session(&f);
    let prompt = "a caller that reads late ".repeat(200);
    let mut turn = f
        .manager
        .send_message(&s, support::turns::text(&prompt))
        .await
        .expect("send");
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    assert!(f.manager.stop(&s, "stop_button").expect("stop"));
    // The turn sees the stop while the caller has no room, and the caller reads a second later.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let mut kinds = Vec::new();
    let mut text = String::new();
    while let Some(event) = turn.events.recv().await {
        if let makalog::runtime::SessionEvent::TextDelta { text: piece, .. } = &event {
            text.push_str(piece);
        }
        kinds.push(event.type_name().to_owned());
    }
    let deltas = kinds.iter().filter(|k| *k == "text_delta").count();
    assert!(
        deltas > 64 * 2,
        "the caller fell behind by more than its room: {deltas}"
    );
    assert_eq!(
        kinds[kinds.len() - 2..],
        ["abort", "complete"],
        "the ending"
    );
    assert!(
        format!("Fake backend received: {prompt}").starts_with(&text),
        "the deltas are the echo's first ones, with no gap"
    );
    assert_eq!(turn.finish().await.expect("ended").status, "cancelled");
}
