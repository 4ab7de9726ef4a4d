//! What a turn costs the disk, and what waiting on it costs the runtime: a streamed turn of the
//! instant fake takes two syncs (its opening; its facts with its end, which the backend has
//! ready together); a read of facts queued and not yet waited for makes them durable itself
//! rather than waiting for a sync nobody leads; a sync held up in one session stops no other
//! session's turn, even on a runtime with one worker.

mod support;

use makalog::format::RecordKind;
use makalog::runtime::{BackendRegistry, SessionManager, Sources, TurnInput};
use makalog::store::{open_execution_stores_for_write, SessionBatch};
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::counting::{counting, CountingStorage, SyncGate};

struct Fixture {
    _t: tempfile::TempDir,
    storage: Arc<CountingStorage>,
    syncs: Arc<AtomicU64>,
    _owner: makalog::root::Owner,
    manager: SessionManager,
}

fn fixture() -> Fixture {
    let t = tempfile::tempdir().expect("tempdir");
    let (storage, syncs) = counting(t.path().join("root"), u64::MAX);
    makalog::root::create_or_open_root(&*storage).expect("root");
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let manager = SessionManager::new(
        stores,
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )
    .expect("manager");
    Fixture {
        _t: t,
        storage,
        syncs,
        _owner: owner,
        manager,
    }
}

fn session(f: &Fixture, id: &str) {
    f.manager
        .create_session(json!({"id": id, "cwd": "/work", "backend": "fake",
                               "llmConnectionSlug": "fake", "model": "fake-model"}))
        .expect("session");
}

async fn turn(manager: &SessionManager, session: &str) -> makalog::runtime::TurnOutcome {
    let input = TurnInput {
        text: "hello there, backend".into(),
        ..TurnInput::default()
    };
    let mut turn = manager.send_message(session, input).await.expect("send");
    let mut seen = 0;
    while turn.events.recv().await.is_some() {
        seen += 1;
    }
    let outcome = turn.finish().await.expect("turn");
    assert_eq!(outcome.event_count, seen, "every event reached the caller");
    outcome
}

#[tokio::test]
async fn a_streamed_turn_takes_two_syncs_its_opening_and_its_facts_with_its_end() {
    let f = fixture();
    session(&f, "s");
    turn(&f.manager, "s").await;
    for _ in 0..3 {
        let before = f.syncs.load(Ordering::SeqCst);
        let outcome = turn(&f.manager, "s").await;
        assert_eq!(outcome.status, "completed");
        assert_eq!(outcome.fact_failures, 0);
        assert_eq!(f.syncs.load(Ordering::SeqCst) - before, 2);
    }
    let stores = f.manager.stores();
    let messages = stores.sessions.read_messages("s", None).expect("messages");
    let assistants = messages
        .iter()
        .filter(|m| m.value()["type"] == json!("assistant"))
        .count();
    assert_eq!(assistants, 4, "each turn's text fact is stored");
}

#[test]
fn a_read_of_facts_nobody_waited_for_makes_them_durable_itself() {
    let f = fixture();
    session(&f, "s");
    let stores = f.manager.stores();
    let message = makalog::model::StoredMessage::from_value(
        json!({"type": "user", "id": "m1", "turnId": "t1", "ts": 5, "text": "hi"}),
    )
    .expect("message");
    let mut batch = SessionBatch::new(&stores.runtime_events, "s");
    batch
        .record(RecordKind::Message, message.canonical_json().as_bytes())
        .expect("queued");
    assert!(!batch.is_durable(), "queued, not synced");
    let before = f.syncs.load(Ordering::SeqCst);
    // Nobody waits for the batch: the read must not wait for a sync no one leads.
    let messages = stores.sessions.read_messages("s", None).expect("read");
    assert_eq!(messages.len(), 1, "the queued message is shown");
    assert_eq!(
        f.syncs.load(Ordering::SeqCst) - before,
        1,
        "the read synced what it shows"
    );
    assert!(batch.is_durable(), "the read's sync covered the batch");
    batch.commit().expect("already durable");
    assert_eq!(f.syncs.load(Ordering::SeqCst) - before, 1, "no second sync");
}

/// Holds the storage's next `sync_data`: it reports on the first channel once it started, then
/// waits for the second (`true` lets it sync, `false` fails it).
fn gate_next_sync(f: &Fixture) -> (std::sync::mpsc::Receiver<()>, std::sync::mpsc::Sender<bool>) {
    let (entered_tx, entered) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel();
    *f.storage.meter.gate.lock().expect("meter") = Some(SyncGate {
        entered: entered_tx,
        release: release_rx,
    });
    (entered, release)
}

fn runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .expect("runtime")
}

#[test]
fn a_sync_held_in_one_session_stops_no_other_sessions_turn() {
    let f = Arc::new(fixture());
    session(&f, "held");
    session(&f, "free");
    let rt = runtime(1);
    let (entered, release) = gate_next_sync(&f);
    let held = {
        let f = f.clone();
        rt.spawn(async move { turn(&f.manager, "held").await })
    };
    entered
        .recv()
        .expect("the held session's opening is syncing");
    let (done_tx, done) = std::sync::mpsc::channel();
    {
        let f = f.clone();
        rt.spawn(async move {
            let _ = done_tx.send(turn(&f.manager, "free").await);
        });
    }
    // A bound for a hang, not a measurement: the other turn needs the runtime's one worker,
    // and waiting here off the runtime, its timers aside, fails instead of hanging.
    let outcome = done
        .recv_timeout(Duration::from_secs(60))
        .expect("the other session's turn ended while the sync was held");
    assert_eq!(outcome.status, "completed");
    release.send(true).expect("let the held sync go");
    let outcome = rt.block_on(held).expect("task");
    assert_eq!(outcome.status, "completed");
}

/// A stop asked while a turn's opening syncs stops that turn: it is in flight (it holds the
/// session), so the stop is neither lost nor left for the next turn. It ends cancelled.
#[test]
fn a_stop_during_a_turns_opening_stops_that_turn() {
    let f = Arc::new(fixture());
    session(&f, "s");
    let rt = runtime(2);
    // A first turn makes the session's backend, so a stop reaches it.
    let first = rt.block_on(turn(&f.manager, "s"));
    assert_eq!(first.status, "completed");
    let (entered, release) = gate_next_sync(&f);
    let second = {
        let f = f.clone();
        rt.spawn(async move { turn(&f.manager, "s").await })
    };
    entered
        .recv()
        .expect("the second turn's opening is syncing");
    assert!(f.manager.stop("s", "stop_button").expect("stop"));
    release.send(true).expect("let the sync go");
    let outcome = rt.block_on(second).expect("task");
    assert_eq!(outcome.status, "cancelled", "{outcome:?}");
    // The stop was that turn's: the next one runs to its end.
    let third = rt.block_on(turn(&f.manager, "s"));
    assert_eq!(third.status, "completed");
}

#[tokio::test]
async fn a_sessions_open_runs_slot_is_synced_once_and_freed_after_the_64_sessions_used_since() {
    use makalog::runtime::{read_open_runs, Listing};
    let f = fixture();
    session(&f, "s");
    let first = f.manager.recover_interrupted_sessions().expect("recover");
    assert!(first.scanned_all, "no open-runs file yet: it is created");
    let before = f.syncs.load(Ordering::SeqCst);
    let run = turn(&f.manager, "s").await.run_id;
    assert_eq!(
        f.syncs.load(Ordering::SeqCst) - before,
        3,
        "the session's slot, the opening, the end"
    );
    for _ in 0..2 {
        let before = f.syncs.load(Ordering::SeqCst);
        turn(&f.manager, "s").await;
        assert_eq!(
            f.syncs.load(Ordering::SeqCst) - before,
            2,
            "the slot is kept"
        );
    }
    assert_eq!(
        read_open_runs(&*f.storage).expect("read"),
        Listing::Open(vec![("s".into(), run)])
    );
    let others: Vec<String> = (0..makalog::runtime::IDLE_KEPT)
        .map(|n| format!("o-{n:02}"))
        .collect();
    for id in &others {
        session(&f, id);
        turn(&f.manager, id).await;
    }
    let Listing::Open(named) = read_open_runs(&*f.storage).expect("read") else {
        panic!("the file is sound");
    };
    let named: Vec<&str> = named.iter().map(|(s, _)| s.as_str()).collect();
    let want: Vec<&str> = others.iter().map(String::as_str).collect();
    assert_eq!(named.len(), makalog::runtime::IDLE_KEPT);
    assert!(
        want.iter().all(|id| named.contains(id)) && !named.contains(&"s"),
        "the least recently used session's slot was freed: {named:?}"
    );
    let report = f.manager.recover_interrupted_sessions().expect("recover");
    assert!(report.recovered.is_empty(), "every run had ended");
}
