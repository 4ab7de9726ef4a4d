//! The execution stores after a write of a session failed: its writer is poisoned, and its view
//! may show records that never reached the disk. No read answers from that view (a retried
//! terminal commit took the failed one's steps for done), and the session is not locked out:
//! the next call, read or write, opens it again from its files.

mod support;

use makalog::root::Owner;
use makalog::storage::{Fault, FaultKind, SimRng, SimStorage, Tear};
use makalog::store::{open_execution_stores_for_write, ExecutionStores};
use serde_json::{json, Value};
use std::sync::Arc;
use support::events::terminal;
use support::sim_root;
use support::stores::session_header;

fn open(storage: &Arc<SimStorage>) -> (Owner, ExecutionStores) {
    let owner = Owner::try_acquire(storage.clone())
        .expect("lease")
        .expect("free");
    let stores = open_execution_stores_for_write(&owner).expect("stores");
    (owner, stores)
}

/// The next operation on the storage fails with EIO (once).
fn fail_next(storage: &SimStorage) {
    storage.inject(Fault {
        nth: storage.operations() + 1,
        forever: false,
        kind: FaultKind::Eio,
    });
}

fn run(id: &str) -> Value {
    json!({
        "runId": id, "sessionId": "s", "turnId": "turn-1", "llmConnectionSlug": "fake",
        "modelId": "fake-model", "cwd": "/work", "status": "running", "backendKind": "fake",
        "permissionMode": "ask", "createdAt": 1, "updatedAt": 1
    })
}

fn message(i: u32) -> Value {
    json!({"type": "user", "id": format!("m{i}"), "turnId": "turn-1", "ts": i, "text": "hi"})
}

/// A terminal commit whose write failed, committed again: every step is on disk, as a power
/// loss right after shows.
#[test]
fn a_terminal_commit_retried_after_its_write_failed_makes_every_step() {
    let storage = sim_root();
    {
        let (_owner, s) = open(&storage);
        s.sessions.create(session_header("s", 1)).expect("session");
        s.runs.create_run(run("r")).expect("run");
        let end = terminal("s", "r", "turn-1", "end", 9.0, "completed");
        fail_next(&storage);
        assert!(s.runs.commit_terminal("s", "r", &end, None).is_err());
        storage.clear_faults();
        let header = s
            .runs
            .commit_terminal("s", "r", &end, None)
            .expect("committed again");
        assert_eq!(header.status(), "completed");
    }
    storage.crash(Tear::None, &mut SimRng::new(1));
    let (_owner, s) = open(&storage);
    assert_eq!(
        s.runs.read_run("s", "r").expect("run").status(),
        "completed"
    );
    let kinds: Vec<String> = s
        .runs
        .read_events("s", "r")
        .expect("events")
        .into_iter()
        .map(|(_, e)| e.event_type().to_owned())
        .collect();
    assert_eq!(kinds, ["run_completed"], "one terminal run event, durable");
}

/// One failed write does not lock a session out of the stores: the next append, read and
/// header update open it again, and what they acknowledge survives a power loss.
#[test]
fn a_session_whose_write_failed_takes_the_next_calls() {
    let storage = sim_root();
    {
        let (_owner, s) = open(&storage);
        s.sessions.create(session_header("s", 1)).expect("session");
        s.sessions.append_message("s", message(1)).expect("first");
        fail_next(&storage);
        assert!(s.sessions.append_message("s", message(2)).is_err());
        storage.clear_faults();
        s.sessions
            .append_message("s", message(3))
            .expect("the next append");
        assert!(s.sessions.read_session("s").expect("read").is_some());
        let mut renamed = session_header("s", 1);
        renamed["name"] = json!("renamed");
        s.sessions.update_session(renamed).expect("an update");
    }
    storage.crash(Tear::None, &mut SimRng::new(2));
    let (_owner, s) = open(&storage);
    let ids: Vec<String> = s
        .sessions
        .read_messages("s", None)
        .expect("messages")
        .iter()
        .map(|m| m.value()["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        ids.contains(&"m1".into()) && ids.contains(&"m3".into()),
        "{ids:?}"
    );
    let header = s.sessions.read_session("s").expect("read").expect("header");
    assert_eq!(header.value()["name"], "renamed");
}
