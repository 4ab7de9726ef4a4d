//! The open-runs file made by a recovery that scanned every session, with a crash at any point
//! of that recovery: a run it kept open (an archived session's) is named in the file as soon
//! as the file is durable, so no later start forgets it.

mod support;

use makalog::root::Owner;
use makalog::runtime::{
    BackendRegistry, SessionManager, Sources, TurnInput, FAKE_ASK_USER_QUESTION_PROMPT,
};
use makalog::storage::{SimRng, SimStorage, Tear};
use makalog::store::{open_execution_stores_for_write, ExecutionStores};
use serde_json::json;
use std::sync::Arc;

/// One life of a host: its lease, stores and manager.
struct Life {
    _owner: Owner,
    stores: Arc<ExecutionStores>,
    manager: SessionManager,
}

fn life(storage: &Arc<SimStorage>) -> Life {
    let owner = support::owner(storage);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    let manager = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )
    .expect("manager");
    Life {
        _owner: owner,
        stores,
        manager,
    }
}

/// The process dies with the machine: only what was synced is left.
fn power_loss(storage: &SimStorage, life: Life, seed: u64) {
    storage.crash(Tear::Pages, &mut SimRng::new(seed));
    std::mem::forget(life);
}

fn archive(stores: &ExecutionStores, on: bool) {
    let header = stores.sessions.read_session("s").expect("read").expect("s");
    let mut next = header.value().clone();
    next["isArchived"] = json!(on);
    stores.sessions.update_session(next).expect("update");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archived_run_kept_by_the_recovery_that_makes_the_file_survives_a_crash_in_it() {
    let mut crashed = 0;
    for point in 1..=8u64 {
        let storage = support::sim_root();
        // A first life, which never recovered (so made no file), leaves a turn waiting in `s`
        // and archives `s`.
        let first = life(&storage);
        first
            .manager
            .create_session(json!({"id": "s", "backend": "fake", "model": "m"}))
            .expect("session");
        let input = TurnInput {
            text: FAKE_ASK_USER_QUESTION_PROMPT.into(),
            ..TurnInput::default()
        };
        let mut turn = first.manager.send_message("s", input).await.expect("send");
        while let Some(e) = turn.events.recv().await {
            if e.type_name() == "user_question_request" {
                break;
            }
        }
        turn.abandon().await;
        archive(&first.stores, true);
        let run = first.stores.runs.list_session_runs("s").expect("runs")[0]
            .run_id()
            .to_owned();
        power_loss(&storage, first, point);
        // The second life's recovery scans every session, keeps the archived run open and
        // makes the file; the machine loses power at `point` of it.
        let second = life(&storage);
        storage.crash_before_point(storage.persistence_points() + point);
        if second.manager.recover_interrupted_sessions().is_err() {
            crashed += 1;
        }
        power_loss(&storage, second, point);
        // Unarchived, a third life's start ends the run.
        let third = life(&storage);
        archive(&third.stores, false);
        let report = third
            .manager
            .recover_interrupted_sessions()
            .unwrap_or_else(|e| panic!("point {point}: {e}"));
        let ended: Vec<&str> = report.recovered.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ended, [run.as_str()], "point {point}: {report:?}");
        assert_eq!(
            third.stores.runs.read_run("s", &run).expect("run").status(),
            "failed",
            "point {point}"
        );
    }
    assert!(crashed > 0, "no crash point fell inside the recovery");
}
