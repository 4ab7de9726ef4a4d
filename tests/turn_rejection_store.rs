//! Root-turn start rejections through the store (MAKA-MODEL §8): committed once, a repeat
//! answered from the stored record as existing or conflict, a turn admitted or rejected but
//! never both (each refusal by name, with nothing written), the same answers after reopening
//! and from the segments alone, and a root of format version 2 refusing one with nothing
//! written.

mod support;

use makalog::index::rebuild;
use makalog::root::{RootMarker, MARKER_FILE, ROOT_KIND};
use makalog::storage::{write_atomically, RealStorage, Storage};
use makalog::store::{open_execution_stores_for_write, Admission, Rejection};
use makalog::Error;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use support::stores::{self, session_header};
use support::temp_root;

fn rejection(turn: &str, skill: &str, at: u64) -> Value {
    json!({
        "schemaVersion": 1, "sessionId": "s", "turnId": turn,
        "execution": {"kind": "external_message"},
        "skillInvocation": {"loaded": [], "failed": [{"name": skill, "reason": "not_found"}],
                            "receipts": []},
        "rejectedAt": at
    })
}

/// A change to a valid rejection that breaks it.
type Edit = fn(&mut Value);

fn admission(turn: &str) -> Value {
    json!({
        "schemaVersion": 1, "sessionId": "s", "turnId": turn, "runId": format!("run-{turn}"),
        "userMessageId": format!("msg-{turn}"), "execution": {"kind": "external_message"},
        "previousRootTurnId": null, "normalizedInput": {"text": "go"}, "sourceMessages": [],
        "admittedAt": 1
    })
}

#[test]
fn a_turn_is_rejected_once_and_a_repeat_is_answered_from_the_stored_record() {
    let (_t, storage) = temp_root();
    let (owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    let first = match s
        .runs
        .commit_root_turn_start_rejection(rejection("t1", "deploy", 10))
    {
        Ok(Rejection::Committed(r)) => r,
        other => panic!("expected committed, got {other:?}"),
    };
    let root = storage.describe_root();
    let size = || stores::session_files(&root, "s");
    let before = size();
    match s
        .runs
        .commit_root_turn_start_rejection(rejection("t1", "deploy", 99))
    {
        Ok(Rejection::Existing(stored)) => {
            assert_eq!(stored, first, "the stored record wins");
            assert_eq!(stored.value()["rejectedAt"], json!(10));
        }
        other => panic!("expected existing, got {other:?}"),
    }
    match s
        .runs
        .commit_root_turn_start_rejection(rejection("t1", "review", 11))
    {
        Ok(Rejection::Conflict(stored)) => assert_eq!(stored, first),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(size(), before, "repeats write nothing");
    s.close().expect("close");
    drop(owner);
    let (_owner, s) = stores::open(&storage);
    let read = s
        .runs
        .read_root_turn_start_rejection("s", "t1")
        .expect("read");
    assert_eq!(read, Some(first.clone()), "after reopening");
    assert_eq!(
        s.runs
            .read_root_turn_start_rejection("s", "t2")
            .expect("read"),
        None
    );
    let rebuilt = rebuild(&*storage, "s").expect("rebuild");
    assert_eq!(rebuilt.session.rejections.len(), 1);
    assert_eq!(rebuilt.session.rejections["t1"], first.canonical_json());
}

#[test]
fn a_turn_is_admitted_or_rejected_never_both() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    s.runs
        .commit_root_turn_start_rejection(rejection("rejected", "deploy", 1))
        .expect("reject");
    assert!(matches!(
        s.runs.admit_root_turn(admission("admitted")),
        Ok(Admission::Admitted(_))
    ));
    let root = storage.describe_root();
    let before = stores::session_files(&root, "s");
    // The rejected-turn error of admitRootTurn.
    match s.runs.admit_root_turn(admission("rejected")) {
        Err(Error::IdentityConflict { what }) => {
            assert_eq!(what, "root turn rejected is already rejected")
        }
        other => panic!("admitting a rejected turn: {other:?}"),
    }
    match s
        .runs
        .commit_root_turn_start_rejection(rejection("admitted", "deploy", 2))
    {
        Err(Error::IdentityConflict { what }) => {
            assert_eq!(what, "root turn admitted is already admitted")
        }
        other => panic!("rejecting an admitted turn: {other:?}"),
    }
    let mut elsewhere = rejection("t3", "deploy", 3);
    elsewhere["sessionId"] = json!("nobody");
    assert!(matches!(
        s.runs.commit_root_turn_start_rejection(elsewhere),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(
        stores::session_files(&root, "s"),
        before,
        "refusals write nothing"
    );
    assert_eq!(
        s.runs
            .read_root_turn_admission("s", "rejected")
            .expect("read"),
        None
    );
    assert_eq!(
        s.runs
            .read_root_turn_start_rejection("s", "admitted")
            .expect("read"),
        None
    );
}

#[test]
fn bad_rejections_name_their_field_and_write_nothing() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    let root = storage.describe_root();
    let before = stores::session_files(&root, "s");
    let cases: [(&str, Edit); 8] = [
        ("execution.kind", |r| {
            r["execution"] = json!({"kind": "context_compact"})
        }),
        ("skillInvocation.loaded", |r| {
            r["skillInvocation"]["loaded"] = json!([{"id": "a", "name": "a"}])
        }),
        ("skillInvocation.failed", |r| {
            r["skillInvocation"]["failed"] = json!([])
        }),
        ("skillInvocation", |r| r["skillInvocation"] = json!([])),
        ("rejectedAt", |r| r["rejectedAt"] = json!(-1)),
        ("turnId", |r| r["turnId"] = json!("a/b")),
        ("schemaVersion", |r| r["schemaVersion"] = json!(2)),
        ("extra", |r| r["extra"] = json!(1)),
    ];
    for (field, edit) in cases {
        let mut r = rejection("t1", "deploy", 1);
        edit(&mut r);
        match s.runs.commit_root_turn_start_rejection(r) {
            Err(Error::InvalidRecord { field: got, .. }) => assert_eq!(got, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    assert_eq!(stores::session_files(&root, "s"), before, "nothing written");
}

#[test]
fn a_root_of_format_version_2_refuses_a_rejection_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let storage = Arc::new(RealStorage::new(dir.path()));
    let marker = RootMarker {
        schema_version: 1,
        kind: ROOT_KIND.into(),
        root_id: "cd".repeat(32),
        format_version: 2,
    };
    let mut bytes = serde_json::to_vec(&marker).expect("marker");
    bytes.push(b'\n');
    write_atomically(&*storage, Path::new(MARKER_FILE), &bytes).expect("marker");
    let owner = support::owner(&storage);
    let s = open_execution_stores_for_write(&owner).expect("stores");
    s.sessions.create(session_header("s", 1)).expect("session");
    let before = stores::session_files(dir.path(), "s");
    match s
        .runs
        .commit_root_turn_start_rejection(rejection("t1", "deploy", 1))
    {
        Err(Error::InvalidInput(why)) => assert!(why.contains("needs format version 3"), "{why}"),
        other => panic!("a version 2 root: {other:?}"),
    }
    assert_eq!(stores::session_files(dir.path(), "s"), before);
    assert_eq!(
        s.runs
            .read_root_turn_start_rejection("s", "t1")
            .expect("read"),
        None
    );
    assert!(matches!(
        s.runs.admit_root_turn(admission("t1")),
        Ok(Admission::Admitted(_))
    ));
}
