//! Recovery at start over a root without its open-runs file (one from before it, or whose
//! file was lost) visits every session: one that cannot be read is reported and skipped, and
//! the others' interrupted runs are still ended, as when the file names them.

mod support;

use makalog::format::RecordKind;
use makalog::runtime::{BackendRegistry, SessionManager, Sources};
use makalog::segment::{Durability, SegmentWriter, WriterConfig};
use makalog::store::open_execution_stores_for_write;
use serde_json::json;
use std::sync::Arc;
use support::stores::session_header;

/// Session `bad`, whose header record is sound as a frame but is no session header.
fn unreadable_session(owner: &makalog::root::Owner) {
    let (w, _) = SegmentWriter::open(owner, "bad", WriterConfig::default()).expect("writer");
    w.append(
        RecordKind::SessionHeader,
        br#"{"not":"a header"}"#,
        Durability::Durable,
    )
    .expect("append");
}

/// Session `good`, with run `r1` created and never started.
fn good_with_a_created_run(stores: &makalog::store::ExecutionStores) {
    stores
        .sessions
        .create(session_header("good", 1))
        .expect("session");
    stores
        .runs
        .create_run(json!({"runId": "r1", "sessionId": "good", "turnId": "t1",
            "llmConnectionSlug": "fake", "modelId": "m", "cwd": "/w", "status": "created",
            "backendKind": "fake", "permissionMode": "ask", "createdAt": 1, "updatedAt": 1}))
        .expect("run");
}

#[test]
fn an_unreadable_session_is_skipped_and_the_others_recovered_without_the_file() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    unreadable_session(&owner);
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    good_with_a_created_run(&stores);
    let manager = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_fake(),
        Sources::system(),
    )
    .expect("manager");
    let report = manager
        .recover_interrupted_sessions()
        .expect("recovery goes on past an unreadable session");
    assert!(report.scanned_all, "no open-runs file: every session");
    let ended: Vec<&str> = report.recovered.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ended, ["r1"]);
    assert_eq!(
        stores.runs.read_run("good", "r1").expect("run").status(),
        "failed"
    );
    let skipped: Vec<&str> = report.skipped.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(skipped, ["bad"], "{:?}", report.skipped);
    // The unreadable session holds recovery's file as it was: a later start looks again.
    let again = manager.recover_interrupted_sessions().expect("again");
    assert!(again.recovered.is_empty(), "{again:?}");
    assert_eq!(again.skipped.len(), 1, "{again:?}");
}

/// Without the file, with a session unreadable, the others are still read the way the listing
/// reads them: only a session with a run to end is opened for writing, not every one.
#[test]
fn without_the_file_only_sessions_with_runs_to_end_are_opened_for_writing() {
    let (_t, storage) = support::temp_root();
    let owner = support::owner(&storage);
    unreadable_session(&owner);
    {
        let stores = open_execution_stores_for_write(&owner).expect("stores");
        for n in 0..5 {
            stores
                .sessions
                .create(session_header(&format!("idle-{n}"), 1))
                .expect("session");
        }
        good_with_a_created_run(&stores);
        stores.close().expect("close");
    }
    let stores = Arc::new(open_execution_stores_for_write(&owner).expect("stores"));
    assert_eq!(stores.runtime_events.open_sessions(), 0);
    let manager = SessionManager::new(
        stores.clone(),
        BackendRegistry::with_fake(),
        Sources::system(),
    )
    .expect("manager");
    let report = manager.recover_interrupted_sessions().expect("recover");
    assert!(report.scanned_all);
    let ended: Vec<&str> = report.recovered.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ended, ["r1"]);
    let skipped: Vec<&str> = report.skipped.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(skipped, ["bad"], "{:?}", report.skipped);
    assert_eq!(
        stores.runtime_events.open_sessions(),
        1,
        "only `good`, whose run was ended, is open for writing"
    );
}
