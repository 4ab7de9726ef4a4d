//! The terminal commit of a run (MAKA-MODEL §7): the terminal runtime event, the run's status,
//! then exactly one terminal run event; a commit run again, or finished after an interruption
//! at any step, leaves the same records and never two terminal run events.

mod support;

use makalog::storage::Storage;
use makalog::store::ExecutionStores;
use makalog::Error;
use serde_json::{json, Value};
use support::events::{event, terminal};
use support::stores::{self, session_files, session_header};
use support::temp_root;

fn run(id: &str) -> Value {
    json!({
        "runId": id, "sessionId": "s", "turnId": "turn-1", "llmConnectionSlug": "fake",
        "modelId": "fake-model", "cwd": "/work", "status": "running", "backendKind": "fake",
        "permissionMode": "ask", "createdAt": 1, "updatedAt": 1
    })
}

fn terminal_events(s: &ExecutionStores, run: &str) -> Vec<(String, Value)> {
    s.runs
        .read_events("s", run)
        .expect("events")
        .into_iter()
        .filter(|(_, e)| e.is_terminal())
        .map(|(_, e)| (e.event_type().to_owned(), e.value()["data"].clone()))
        .collect()
}

#[test]
fn each_outcome_commits_its_status_and_one_terminal_run_event_once() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    let root = storage.describe_root().to_owned();
    for (n, (status, run_status, kind)) in [
        ("completed", "completed", "run_completed"),
        ("failed", "failed", "run_failed"),
        ("aborted", "cancelled", "run_cancelled"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = format!("run-{n}");
        s.runs.create_run(run(&id)).expect("run");
        let end = terminal("s", &id, "turn-1", &format!("end-{n}"), 9.0, status);
        let header = s
            .runs
            .commit_terminal("s", &id, &end, None)
            .expect("commit");
        assert_eq!(header.status(), run_status);
        assert_eq!(header.value()["completedAt"], json!(9));
        let ended = terminal_events(&s, &id);
        assert_eq!(ended.len(), 1, "{status}: exactly one terminal run event");
        assert_eq!(ended[0].0, kind);
        if status == "failed" {
            assert_eq!(
                header.value()["failureClass"],
                "unknown",
                "the default class"
            );
            assert_eq!(ended[0].1, json!({"failureClass": "unknown"}));
        } else {
            assert_eq!(ended[0].1, Value::Null, "no data when there is none");
        }
        let stored = s
            .runtime_events
            .read_immutable_runtime_events("s", &id)
            .expect("events");
        assert!(
            stored.iter().any(|e| e.id() == end.id()),
            "the terminal runtime event"
        );
        // Committed again: nothing more is written.
        let before = session_files(&root, "s");
        let again = s.runs.commit_terminal("s", &id, &end, None).expect("again");
        assert_eq!(again, header);
        assert_eq!(
            session_files(&root, "s"),
            before,
            "{status}: a second commit writes nothing"
        );
    }
}

#[test]
fn a_commit_interrupted_after_any_step_is_finished_with_one_terminal_run_event() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    // After step 1: the terminal runtime event is stored, the run still running.
    s.runs.create_run(run("r1")).expect("r1");
    let end1 = terminal("s", "r1", "turn-1", "end-r1", 5.0, "completed");
    s.runtime_events
        .append(&end1, makalog::segment::Durability::Durable)
        .expect("step 1");
    let done = s
        .runs
        .commit_terminal("s", "r1", &end1, None)
        .expect("finish");
    assert_eq!(done.status(), "completed");
    assert_eq!(terminal_events(&s, "r1").len(), 1);
    // After step 2: the status is set, the terminal run event missing.
    s.runs.create_run(run("r2")).expect("r2");
    let end2 = terminal("s", "r2", "turn-1", "end-r2", 6.0, "completed");
    s.runtime_events
        .append(&end2, makalog::segment::Durability::Durable)
        .expect("step 1");
    s.runs
        .update_run(
            "s",
            "r2",
            &json!({"status": "completed", "updatedAt": 6, "completedAt": 6}),
        )
        .expect("step 2");
    let mut extras = serde_json::Map::new();
    extras.insert("stopReason".into(), json!("end_turn"));
    s.runs
        .commit_terminal("s", "r2", &end2, Some(extras))
        .expect("finish");
    assert_eq!(
        terminal_events(&s, "r2"),
        [(
            "run_completed".to_owned(),
            json!({"stopReason": "end_turn"})
        )]
    );
}

#[test]
fn a_terminal_event_of_another_run_or_one_that_does_not_end_it_is_refused() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    s.runs.create_run(run("r")).expect("run");
    let root = storage.describe_root().to_owned();
    let before = session_files(&root, "s");
    let other_turn = terminal("s", "r", "turn-9", "end", 5.0, "completed");
    match s.runs.commit_terminal("s", "r", &other_turn, None) {
        Err(Error::InvalidRecord { field, .. }) => assert_eq!(field, "turnId"),
        other => panic!("{other:?}"),
    }
    let not_final = event(
        "s",
        "r",
        "turn-1",
        "mid",
        5.0,
        json!({"content": {"kind": "text", "text": "hi"}}),
    );
    match s.runs.commit_terminal("s", "r", &not_final, None) {
        Err(Error::InvalidRecord { field, .. }) => assert_eq!(field, "status"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        s.runs.commit_terminal("s", "nope", &other_turn, None),
        Err(Error::NotFound { .. })
    ));
    // Extras the terminal run event cannot hold (a number JavaScript cannot hold exactly)
    // were refused only once the terminal runtime event and the run's status were written,
    // leaving an ended run with no terminal run event, and every retry refused alike.
    let end = terminal("s", "r", "turn-1", "end", 5.0, "completed");
    let mut extras = serde_json::Map::new();
    extras.insert("n".into(), json!(9_007_199_254_740_993u64));
    match s.runs.commit_terminal("s", "r", &end, Some(extras)) {
        Err(Error::InvalidRecord { record, .. }) => assert_eq!(record, "run event"),
        other => panic!("{other:?}"),
    }
    assert_eq!(session_files(&root, "s"), before, "refusals write nothing");
    assert_eq!(s.runs.read_run("s", "r").expect("run").status(), "running");
}

/// §7: the terminal run event's data is `{failureClass (only if failed), …extras}`: a failure
/// class the caller gives in its extras wins over the one the event implies.
#[test]
fn a_failure_class_in_the_extras_wins_over_the_events() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    s.runs.create_run(run("r")).expect("run");
    let end = terminal("s", "r", "turn-1", "end", 9.0, "failed");
    let mut extras = serde_json::Map::new();
    extras.insert("failureClass".into(), json!("provider_error"));
    s.runs
        .commit_terminal("s", "r", &end, Some(extras))
        .expect("commit");
    assert_eq!(
        terminal_events(&s, "r"),
        [(
            "run_failed".to_owned(),
            json!({"failureClass": "provider_error"})
        )]
    );
}

/// The commit's three steps go to the run's session log in order and are made durable by one
/// data sync (a crash keeps a prefix of them, which a repeat completes); a repeat syncs nothing.
#[test]
fn a_terminal_commit_costs_one_data_sync() {
    use makalog::root::Owner;
    use makalog::store::open_execution_stores_for_write;
    use std::sync::atomic::Ordering;
    let t = tempfile::tempdir().expect("tmp");
    let (storage, syncs) = support::counting::counting(t.path().join("root"), u64::MAX);
    makalog::root::create_or_open_root(&*storage).expect("root");
    let owner = Owner::try_acquire(storage.clone())
        .expect("acquire")
        .expect("free");
    let s = open_execution_stores_for_write(&owner).expect("stores");
    s.sessions.create(session_header("s", 1)).expect("session");
    s.runs.create_run(run("r")).expect("run");
    let end = terminal("s", "r", "turn-1", "end-r", 9.0, "completed");
    let before = syncs.load(Ordering::SeqCst);
    s.runs
        .commit_terminal("s", "r", &end, None)
        .expect("commit");
    assert_eq!(syncs.load(Ordering::SeqCst) - before, 1, "one data sync");
    assert_eq!(terminal_events(&s, "r").len(), 1);
    let before = syncs.load(Ordering::SeqCst);
    s.runs.commit_terminal("s", "r", &end, None).expect("again");
    assert_eq!(
        syncs.load(Ordering::SeqCst) - before,
        0,
        "a repeat writes nothing"
    );
}

/// A commit of another outcome, made while the first one's steps wait for their sync, reads
/// them as queued and queues nothing: its refusal ("already ended") is given only once what it
/// rests on is durable, and when that sync fails, the refusal is not given at all.
#[test]
fn a_refusal_resting_on_a_commit_not_yet_durable_waits_for_it_and_fails_with_it() {
    use std::sync::mpsc;
    use std::sync::Arc;
    use std::time::Duration;
    let t = tempfile::tempdir().expect("tmp");
    let (storage, _) = support::counting::counting(t.path().join("root"), u64::MAX);
    makalog::root::create_or_open_root(&*storage).expect("root");
    let owner = support::owner(&storage);
    let s = Arc::new(makalog::store::open_execution_stores_for_write(&owner).expect("stores"));
    s.sessions.create(session_header("s", 1)).expect("session");
    s.runs.create_run(run("run-1")).expect("run");
    let end = terminal("s", "run-1", "turn-1", "end-1", 9.0, "completed");
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    *storage.meter.gate.lock().expect("meter") = Some(support::counting::SyncGate {
        entered: entered_tx,
        release: release_rx,
    });
    let first = {
        let (s, end) = (s.clone(), end.clone());
        std::thread::spawn(move || s.runs.commit_terminal("s", "run-1", &end, None))
    };
    entered.recv().expect("the first commit's sync started");
    let (answer_tx, answer) = mpsc::channel();
    {
        let s = s.clone();
        let other = terminal("s", "run-1", "turn-1", "end-2", 10.0, "failed");
        std::thread::spawn(move || {
            let _ = answer_tx.send(s.runs.commit_terminal("s", "run-1", &other, None));
        });
    }
    // A generous pause, not a measurement: long enough for a wrong answer to arrive.
    if let Ok(r) = answer.recv_timeout(Duration::from_millis(500)) {
        panic!("answered before the first commit was durable: {r:?}");
    }
    release.send(false).expect("fail the first commit's sync");
    assert!(first.join().expect("join").is_err(), "the first failed");
    let again = answer
        .recv_timeout(Duration::from_secs(60))
        .expect("an answer");
    let err = again.expect_err("nothing is answered from a failed log");
    assert!(
        !err.to_string().contains("already ended"),
        "refused on a commit that failed: {err}"
    );
}
