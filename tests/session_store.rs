//! The session store: sessions created and updated, messages appended, each answer after
//! reopening equal to the one rebuilt from the segments alone; bad input, a taken id and raw
//! records refused with a typed error and nothing written. Long reads of messages:
//! `session_messages.rs`; listing: `session_listing.rs`.

mod support;

use makalog::index::rebuild;
use makalog::model::{SessionHeader, StoredMessage};
use makalog::storage::Storage;
use makalog::store::ExecutionStores;
use makalog::Error;
use serde_json::json;
use support::messages::*;
use support::stores::{self, session_header};
use support::{snapshot, temp_root};

#[test]
fn sessions_and_messages_read_back_the_same_after_reopening_and_as_the_segments_say() {
    let (_t, storage) = temp_root();
    let (owner, s) = stores::open(&storage);
    s.sessions.create(session_header("b", 20)).expect("b");
    s.sessions.create(session_header("a", 10)).expect("a");
    s.sessions.create(session_header("c", 20)).expect("c");
    let mut running = session_header("a", 10);
    running["status"] = json!("running");
    running["lastUsedAt"] = json!(30);
    s.sessions
        .update_session(running.clone())
        .expect("status change");
    for (i, turn) in ["turn-1", "turn-1", "turn-2"].iter().enumerate() {
        s.sessions
            .append_message("a", user(&format!("m{i}"), turn, i as u64))
            .expect("message");
    }
    let note = json!({"type": "system_note", "id": "n", "ts": 9, "kind": "session_start"});
    s.sessions.append_message("a", note).expect("note");
    let answers = |s: &ExecutionStores| {
        let listed = s.sessions.list_sessions().expect("list");
        let a = s
            .sessions
            .read_session("a")
            .expect("read")
            .expect("a exists");
        let all = s.sessions.read_messages("a", None).expect("messages");
        let turn1 = s.sessions.read_messages("a", Some("turn-1")).expect("turn");
        (listed, a, all, turn1)
    };
    let live = answers(&s);
    assert_eq!(ids(&live.0), ["a", "b", "c"], "by createdAt, then id");
    assert_eq!(live.1.status(), "running", "the latest header");
    assert_eq!(live.1.value(), &running);
    let msg_ids: Vec<&str> = live.2.iter().map(StoredMessage::id).collect();
    assert_eq!(msg_ids, ["m0", "m1", "m2", "n"], "append order");
    let turn_ids: Vec<&str> = live.3.iter().map(StoredMessage::id).collect();
    assert_eq!(turn_ids, ["m0", "m1"]);
    s.close().expect("close");
    drop(owner);

    // Read-only (nothing open), then opened again: the same answers, and writing nothing.
    let (owner, s) = stores::open(&storage);
    let before = snapshot(&storage.describe_root());
    assert_eq!(answers(&s), live);
    assert_eq!(
        before,
        snapshot(&storage.describe_root()),
        "reads write nothing"
    );
    // The view is a cache: rebuilt from the segments alone it holds the same.
    let rebuilt = rebuild(&*storage, "a").expect("rebuild");
    assert_eq!(
        rebuilt.session.header.as_deref(),
        Some(live.1.canonical_json())
    );
    assert_eq!(rebuilt.session.messages.len(), 4);
    s.sessions
        .append_message("a", user("m3", "turn-2", 10))
        .expect("after reopening");
    assert_eq!(
        s.sessions
            .read_messages("a", Some("turn-2"))
            .expect("turn 2")
            .len(),
        2
    );
    s.close().expect("close");
    drop(owner);
    let sidecar = std::fs::read(storage.describe_root().join("sessions/a/index")).expect("index");
    let view = rebuild(&*storage, "a").expect("rebuild");
    assert!(
        sidecar == makalog::index::encode_sidecar(&view, &[]).expect("encode"),
        "the sidecar equals a rebuild byte for byte"
    );
}

fn refused_field<T: std::fmt::Debug>(r: makalog::Result<T>) -> String {
    match r {
        Err(Error::InvalidRecord { field, .. }) => field,
        other => panic!("expected a typed refusal, got {other:?}"),
    }
}

#[test]
fn bad_input_is_refused_naming_the_field_with_nothing_written() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    let root = storage.describe_root();
    let before = snapshot(&root);
    let mut bad = session_header("x", 1);
    bad["status"] = json!("napping");
    assert_eq!(refused_field(s.sessions.create(bad)), "status");
    let mut spawn = session_header("x", 1);
    spawn["subagentSpawn"] = json!({
        "schemaVersion": 1, "requestFingerprint": "a".repeat(64),
        "initialTurnId": "t", "initialRunId": "r"
    });
    assert_eq!(refused_field(s.sessions.create(spawn)), "subagentSpawn");
    assert_eq!(
        before,
        snapshot(&root),
        "nothing written for a refused session"
    );
    assert!(s.sessions.read_session("x").expect("read").is_none());

    s.sessions.create(session_header("x", 1)).expect("x");
    assert!(matches!(
        s.sessions.create(session_header("x", 2)),
        Err(Error::ClaimConflict { .. })
    ));
    let log = root.join("sessions/x");
    let size = |dir: &std::path::Path| -> u64 {
        std::fs::read_dir(dir)
            .expect("dir")
            .map(|e| e.expect("entry").metadata().expect("meta").len())
            .sum()
    };
    let before = size(&log);
    let no_turn = json!({"type": "user", "id": "m", "ts": 1, "text": "hi"});
    assert_eq!(
        refused_field(s.sessions.append_message("x", no_turn)),
        "turnId"
    );
    assert_eq!(size(&log), before, "nothing written for a refused message");
    assert!(matches!(
        s.sessions.append_message("nobody", user("m", "t", 1)),
        Err(Error::InvalidInput(_))
    ));
    assert!(
        !root.join("sessions/nobody").exists(),
        "no session made for it"
    );
    let mut moved = session_header("x", 1);
    moved["subagentParent"] = json!({
        "kind": "subagent", "parentSessionId": "p",
        "spawnedBy": {"parentRunId": "r", "parentTurnId": "t", "toolCallId": "c"},
        "lifecycle": "foreground"
    });
    assert_eq!(
        refused_field(s.sessions.update_session(moved)),
        "subagentParent"
    );
}

#[test]
fn an_id_taken_by_a_create_that_crashed_before_its_header_is_never_reused() {
    let (_t, storage) = temp_root();
    {
        let (_owner, s) = stores::open(&storage);
        // The claim of a create whose header never reached the log.
        s.claims.claim_session_create("ghost").expect("claim");
    }
    let (_owner, s) = stores::open(&storage);
    assert!(s.sessions.read_session("ghost").expect("read").is_none());
    assert!(matches!(
        s.sessions.create(session_header("ghost", 1)),
        Err(Error::ClaimConflict { .. })
    ));
    assert!(s.sessions.list_sessions().expect("list").is_empty());
}

#[test]
fn a_raw_record_is_refused_unless_it_is_a_session_record_of_that_session_with_nothing_written() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("a", 1)).expect("a");
    let root = storage.describe_root();
    let before = snapshot(&root);
    let kind = makalog::format::RecordKind::SessionHeader;
    let header = SessionHeader::from_value(session_header("b", 2)).expect("b's header");
    let payload = header.canonical_json().as_bytes();
    // Another session's header: refused before session "a" (or any other) is touched.
    let err = s
        .runtime_events
        .append_record("a", kind, payload)
        .expect_err("b's header in a");
    assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
    assert!(
        err.to_string().contains("\"b\"'s, in session \"a\""),
        "{err}"
    );
    let err = s
        .runtime_events
        .append_record("c", kind, payload)
        .expect_err("b's header in c");
    assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
    // A run of session "b" in the absent session "c": refused before "c" is made.
    let run = makalog::model::RunHeader::from_value(json!({
        "runId": "r", "sessionId": "b", "turnId": "t", "llmConnectionSlug": "fake",
        "modelId": "m", "cwd": "/work", "status": "created", "backendKind": "fake",
        "permissionMode": "ask", "createdAt": 1, "updatedAt": 1
    }))
    .expect("a run of b");
    let err = s
        .runtime_events
        .append_record(
            "c",
            makalog::format::RecordKind::Run,
            run.canonical_json().as_bytes(),
        )
        .expect_err("b's run in c");
    assert!(
        err.to_string().contains("belongs to session \"b\""),
        "{err}"
    );
    // A kind no store writes is not appended as opaque bytes.
    let seal = makalog::format::RecordKind::RunSeal;
    let err = s
        .runtime_events
        .append_record("a", seal, b"{}")
        .expect_err("a seal");
    assert!(err.to_string().contains("not a session record"), "{err}");
    let err = s
        .runtime_events
        .append_record("a", kind, b"\xff")
        .expect_err("not UTF-8");
    match err {
        Error::InvalidRecord { field, why, .. } => {
            assert_eq!((field.as_str(), why.as_str()), ("<record>", "is not UTF-8"))
        }
        other => panic!("expected a typed refusal, got {other:?}"),
    }
    assert_eq!(snapshot(&root), before, "nothing written, no session made");
}
