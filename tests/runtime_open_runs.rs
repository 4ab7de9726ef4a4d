//! The open-runs file (FORMAT.md, "Open runs"): recovery at start visits only the sessions it
//! names, empties it after, and visits every session when it is missing or a slot is torn.

mod support;

use makalog::runtime::{BackendRegistry, SessionManager, Sources};
use makalog::storage::Storage;
use makalog::store::open_execution_stores_for_write;
use serde_json::json;
use std::sync::Arc;

fn manager_over(stores: &Arc<makalog::store::ExecutionStores>) -> SessionManager {
    SessionManager::new(
        stores.clone(),
        BackendRegistry::with_fake(),
        Sources::system(),
    )
    .expect("manager")
}

/// A turn left waiting for an answer when the process stops: its run stays open.
async fn leave_waiting(manager: &SessionManager, session: &str) {
    use makalog::runtime::{TurnInput, FAKE_ASK_USER_QUESTION_PROMPT};
    let input = TurnInput {
        text: FAKE_ASK_USER_QUESTION_PROMPT.into(),
        ..TurnInput::default()
    };
    let mut turn = manager.send_message(session, input).await.expect("send");
    while let Some(e) = turn.events.recv().await {
        if e.type_name() == "user_question_request" {
            break;
        }
    }
    turn.abandon().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_visits_the_sessions_the_open_runs_file_names_and_scans_all_when_it_is_torn() {
    use makalog::runtime::{read_open_runs, Listing, OPEN_RUNS_FILE};
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let manager = manager_over(&stores);
    for n in 0..5 {
        manager
            .create_session(json!({"id": format!("idle-{n}"), "backend": "fake", "model": "m"}))
            .expect("session");
    }
    let first = manager.recover_interrupted_sessions().expect("recover");
    assert!(first.scanned_all, "no file yet: every session is visited");
    assert_eq!(
        read_open_runs(&*storage).expect("read"),
        Listing::Open(vec![])
    );
    // A turn left waiting when the process stops: its run is in the file.
    leave_waiting(&manager, "idle-3").await;
    let run = stores.runs.list_session_runs("idle-3").expect("runs")[0]
        .run_id()
        .to_owned();
    assert_eq!(
        read_open_runs(&*storage).expect("read"),
        Listing::Open(vec![("idle-3".into(), run.clone())])
    );
    drop(manager);
    let restarted = manager_over(&stores);
    let report = restarted.recover_interrupted_sessions().expect("recover");
    assert!(!report.scanned_all);
    assert_eq!(report.sessions, 1, "only the session the file names");
    assert_eq!(report.recovered.len(), 1);
    assert_eq!(
        read_open_runs(&*storage).expect("read"),
        Listing::Open(vec![]),
        "emptied"
    );
    // A torn slot (a crash while one was written) makes recovery visit every session again.
    let path = storage.describe_root().join(OPEN_RUNS_FILE);
    std::fs::write(&path, [7u8; 100]).expect("tear");
    assert_eq!(
        read_open_runs(&*storage).expect("read"),
        Listing::Damaged { offset: 0 }
    );
    let torn = restarted.recover_interrupted_sessions().expect("recover");
    assert!(torn.scanned_all && torn.sessions == 5, "{torn:?}");
    assert_eq!(
        read_open_runs(&*storage).expect("read"),
        Listing::Open(vec![])
    );
}

/// Recovery ends sessions many at once: every interrupted run of many sessions is ended exactly
/// once, the report lists them in the sessions' order, and a second recovery finds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_of_many_sessions_at_once_ends_each_run_once_in_session_order() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let manager = manager_over(&stores);
    let ids: Vec<String> = (0..40).map(|n| format!("waiting-{n:02}")).collect();
    for id in &ids {
        manager
            .create_session(json!({"id": id, "backend": "fake", "model": "m"}))
            .expect("session");
        leave_waiting(&manager, id).await;
    }
    drop(manager);
    let restarted = manager_over(&stores);
    let report = restarted.recover_interrupted_sessions().expect("recover");
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    let ended: Vec<&str> = report
        .recovered
        .iter()
        .map(|r| r.session_id.as_str())
        .collect();
    assert_eq!(
        ended, ids,
        "each session's run once, in the sessions' order"
    );
    for id in &ids {
        let runs = stores.runs.list_session_runs(id).expect("runs");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].status(), "failed", "{id}");
        let ends = stores
            .runs
            .read_events(id, runs[0].run_id())
            .expect("events")
            .iter()
            .filter(|(_, e)| e.is_terminal())
            .count();
        assert_eq!(ends, 1, "{id}: one terminal run event");
    }
    let again = restarted.recover_interrupted_sessions().expect("again");
    assert!(again.recovered.is_empty(), "{:?}", again.recovered);
}

/// MAKA-MODEL §12: an unreadable run is skipped and reported, never ended over its damage, and
/// the file still names it for the next recovery; the other sessions' runs are ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_a_damaged_record_is_skipped_and_the_others_are_ended() {
    let (_t, storage) = support::temp_root();
    {
        let owner = support::owner(&storage);
        let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
        let manager = manager_over(&stores);
        manager
            .recover_interrupted_sessions()
            .expect("make the file");
        for id in ["damaged", "sound"] {
            manager
                .create_session(json!({"id": id, "backend": "fake", "model": "m"}))
                .expect("session");
            leave_waiting(&manager, id).await;
        }
        drop(manager);
        let stores = Arc::try_unwrap(stores)
            .map_err(|_| "shared")
            .expect("the only holder");
        stores.close().expect("close: the sidecars cover the logs");
    }
    // One byte of the damaged session's run_started run event, under its sidecar's cover.
    let segment = support::segment_paths(&storage.describe_root(), "damaged")[0].clone();
    let mut bytes = std::fs::read(&segment).expect("segment");
    let at = bytes
        .windows(b"run_started".len())
        .position(|w| w == b"run_started")
        .expect("the run event");
    bytes[at + 4] ^= 0x20;
    std::fs::write(&segment, bytes).expect("damage");

    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let report = manager_over(&stores)
        .recover_interrupted_sessions()
        .expect("recover");
    let ended: Vec<&str> = report
        .recovered
        .iter()
        .map(|r| r.session_id.as_str())
        .collect();
    assert_eq!(ended, ["sound"]);
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert!(
        report.skipped[0].0.starts_with("damaged/"),
        "{:?}",
        report.skipped
    );
    assert_eq!(
        makalog::runtime::read_open_runs(&*storage).expect("read"),
        makalog::runtime::Listing::Open(vec![
            (
                "damaged".into(),
                stores.runs.list_session_runs("damaged").expect("runs")[0]
                    .run_id()
                    .to_owned()
            ),
            (
                "sound".into(),
                stores.runs.list_session_runs("sound").expect("runs")[0]
                    .run_id()
                    .to_owned()
            ),
        ]),
        "not emptied while a run is left: the next recovery visits it again"
    );
}

/// The slots an earlier life left are kept until a recovery ends their runs; once it has, this
/// process reuses them: the file does not grow past the runs in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slots_of_an_earlier_life_are_reused_once_a_recovery_ended_their_runs() {
    use makalog::runtime::{read_open_runs, Listing, TurnInput, OPEN_RUNS_FILE, SLOT_LEN};
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let manager = manager_over(&stores);
    for n in 0..3 {
        manager
            .create_session(json!({"id": format!("s-{n}"), "backend": "fake", "model": "m"}))
            .expect("session");
    }
    manager.recover_interrupted_sessions().expect("recover");
    leave_waiting(&manager, "s-0").await;
    let path = storage.describe_root().join(OPEN_RUNS_FILE);
    let len = || std::fs::metadata(&path).expect("open-runs").len();
    assert_eq!(len(), SLOT_LEN as u64, "s-0's run in slot 0");
    // The next life runs a turn before it recovers: slot 0 is an earlier life's, so s-1 takes
    // slot 1 (and keeps it while idle).
    drop(manager);
    let restarted = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )
    .expect("manager");
    let input = TurnInput {
        text: "hello".into(),
        ..TurnInput::default()
    };
    let turn = restarted.send_message("s-1", input).await.expect("send");
    turn.finish().await.expect("turn");
    assert_eq!(len(), 2 * SLOT_LEN as u64);
    // Its recovery ends s-0's run: slot 0 is free again, and the next session's run takes it.
    let report = restarted.recover_interrupted_sessions().expect("recover");
    assert_eq!(report.recovered.len(), 1);
    leave_waiting(&restarted, "s-2").await;
    let run = |s: &str| {
        let runs = stores.runs.list_session_runs(s).expect("runs");
        (s.to_owned(), runs[runs.len() - 1].run_id().to_owned())
    };
    // In slot order: s-2's run in slot 0, s-1's kept slot (its run ended) in slot 1.
    assert_eq!(
        read_open_runs(&*storage).expect("read"),
        Listing::Open(vec![run("s-2"), run("s-1")])
    );
    assert_eq!(len(), 2 * SLOT_LEN as u64, "no third slot");
}

/// A root whose open-runs file exists (a first recovery made it), with one session `id` and a
/// manager over the fake backend with its delays.
struct Tracked {
    _t: tempfile::TempDir,
    storage: Arc<makalog::storage::RealStorage>,
    _owner: makalog::root::Owner,
    stores: Arc<makalog::store::ExecutionStores>,
    manager: SessionManager,
}

fn tracked_session(id: &str) -> Tracked {
    let (t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let manager = manager_over(&stores);
    manager
        .create_session(json!({"id": id, "backend": "fake", "model": "m"}))
        .expect("session");
    manager.recover_interrupted_sessions().expect("recover");
    Tracked {
        _t: t,
        storage,
        _owner: owner,
        stores,
        manager,
    }
}

/// Recovery passes archived sessions (§12), but an archived session's interrupted run is not
/// forgotten: it is reported, its slot stays in the file, and once the session is unarchived
/// the next start's recovery ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archived_sessions_interrupted_run_is_ended_by_a_start_after_unarchiving() {
    use makalog::runtime::{read_open_runs, Listing, OPEN_RUNS_FILE};
    let f = tracked_session("s");
    let (storage, stores) = (&f.storage, &f.stores);
    leave_waiting(&f.manager, "s").await;
    // Each recovery below is a start of its own.
    drop(f.manager);
    let run = stores.runs.list_session_runs("s").expect("runs")[0]
        .run_id()
        .to_owned();
    let archived = |on: bool| {
        let header = stores.sessions.read_session("s").expect("read").expect("s");
        let mut next = header.value().clone();
        next["isArchived"] = json!(on);
        stores.sessions.update_session(next).expect("update");
    };
    archived(true);
    let listed = || read_open_runs(&**storage).expect("read");
    let report = manager_over(stores)
        .recover_interrupted_sessions()
        .expect("recover");
    assert!(report.recovered.is_empty(), "an archived session is passed");
    let skipped: Vec<&str> = report.skipped.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(skipped, [format!("s/{run}")], "and its run reported");
    assert_eq!(
        stores.runs.list_unfinished_runs("s").expect("runs").len(),
        1
    );
    assert_eq!(listed(), Listing::Open(vec![("s".into(), run.clone())]));
    // Without the file (every session scanned), the recovery makes it, the run in it: the
    // archived session does not leave every later start scanning every session.
    std::fs::remove_file(storage.describe_root().join(OPEN_RUNS_FILE)).expect("remove");
    let report = manager_over(stores)
        .recover_interrupted_sessions()
        .expect("recover");
    assert!(report.scanned_all && report.recovered.is_empty());
    assert_eq!(listed(), Listing::Open(vec![("s".into(), run.clone())]));
    // Unarchived, the next start ends the run, and the file is emptied.
    archived(false);
    let report = manager_over(stores)
        .recover_interrupted_sessions()
        .expect("recover");
    assert_eq!(report.recovered.len(), 1);
    assert!(report.skipped.is_empty());
    assert!(stores
        .runs
        .list_unfinished_runs("s")
        .expect("runs")
        .is_empty());
    assert_eq!(listed(), Listing::Open(vec![]));
}

/// Recovery visits idle sessions only (§12): a turn in flight in this process is not an
/// interrupted run. Its session is reported as skipped (so the file keeps naming it), and the
/// turn ends as it would have.
#[tokio::test(start_paused = true)]
async fn recovery_leaves_a_turn_in_flight_alone() {
    use makalog::runtime::TurnInput;
    let f = tracked_session("s");
    let (stores, manager) = (&f.stores, &f.manager);
    let input = TurnInput {
        text: "hello there".into(),
        ..TurnInput::default()
    };
    let mut turn = manager.send_message("s", input).await.expect("send");
    turn.events
        .recv()
        .await
        .expect("a first delta: the turn streams");
    let report = manager.recover_interrupted_sessions().expect("recover");
    assert!(report.recovered.is_empty(), "{report:?}");
    let skipped: Vec<&str> = report.skipped.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(skipped, ["s"]);
    let outcome = turn.finish().await.expect("the turn ends");
    assert_eq!(outcome.status, "completed");
    let runs = stores.runs.list_session_runs("s").expect("runs");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status(), "completed");
    // Idle again, the session is passed: nothing is left to end.
    let report = manager.recover_interrupted_sessions().expect("recover");
    assert!(report.recovered.is_empty() && report.skipped.is_empty());
}

/// A session recovery finds busy (a turn of this life in flight) may also hold an earlier
/// life's interrupted run, which recovery did not look at: the file goes on naming it, even
/// once the session's own slot is freed, so a later start ends that run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_sessions_earlier_interrupted_run_is_ended_by_a_later_start() {
    use makalog::runtime::{TurnInput, FAKE_ASK_USER_QUESTION_PROMPT, IDLE_KEPT};
    let f = tracked_session("s");
    let stores = &f.stores;
    leave_waiting(&f.manager, "s").await;
    let earlier = stores.runs.list_session_runs("s").expect("runs")[0]
        .run_id()
        .to_owned();
    // The next life starts a turn in `s` before its recovery; the turn is in flight during it.
    drop(f.manager);
    let life = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )
    .expect("manager");
    let asking = TurnInput {
        text: FAKE_ASK_USER_QUESTION_PROMPT.into(),
        ..TurnInput::default()
    };
    let mut turn = life.send_message("s", asking).await.expect("send");
    while let Some(e) = turn.events.recv().await {
        if e.type_name() == "user_question_request" {
            break;
        }
    }
    let report = life.recover_interrupted_sessions().expect("recover");
    let skipped: Vec<&str> = report.skipped.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(skipped, ["s"], "busy: passed");
    assert!(life.stop("s", "stop_button").expect("stop"));
    turn.finish().await.expect("the turn ends");
    // More sessions than the file keeps idle then run turns: `s`'s slot, the least recently
    // used, is freed.
    for n in 0..=IDLE_KEPT {
        let id = format!("other-{n}");
        life.create_session(json!({"id": id, "backend": "fake", "model": "m"}))
            .expect("session");
        let input = TurnInput {
            text: "hi".into(),
            ..TurnInput::default()
        };
        let turn = life.send_message(&id, input).await.expect("send");
        turn.finish().await.expect("turn");
    }
    drop(life);
    let report = manager_over(stores)
        .recover_interrupted_sessions()
        .expect("recover");
    let ended: Vec<&str> = report.recovered.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ended, [earlier.as_str()], "the earlier life's run is ended");
    let run = stores.runs.read_run("s", &earlier).expect("run");
    assert_eq!(run.status(), "failed");
}

/// Turns that ended while the file was missing are not named by the recovery that makes it:
/// only runs still in flight are (a slot naming an ended run would be kept for good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_ended_before_the_file_existed_are_not_named_in_it() {
    use makalog::runtime::{read_open_runs, Listing, TurnInput};
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
    for _ in 0..2 {
        let input = TurnInput {
            text: "hello".into(),
            ..TurnInput::default()
        };
        let turn = manager.send_message("s", input).await.expect("send");
        turn.finish().await.expect("turn");
    }
    assert_eq!(read_open_runs(&*storage).expect("read"), Listing::Missing);
    let report = manager.recover_interrupted_sessions().expect("recover");
    assert!(
        report.scanned_all && report.recovered.is_empty(),
        "{report:?}"
    );
    assert_eq!(
        read_open_runs(&*storage).expect("read"),
        Listing::Open(vec![]),
        "no run in flight: nothing named"
    );
}
