//! Subagent sessions under their spawn claims (MAKA-MODEL §5): created once per spawn key, the
//! existing child for a retry with a fresh id, every conflict by name, refusals that write
//! nothing, and a crash between the claim and the child's header completed at the next open.

mod support;

use makalog::claims::SubagentSpawnClaim;
use makalog::storage::Storage;
use makalog::Error;
use serde_json::json;
use support::stores::{self, session_header, subagent_header as child};
use support::{snapshot, temp_root};

fn conflict<T: std::fmt::Debug>(r: makalog::Result<T>) -> String {
    match r {
        Err(Error::ClaimConflict { what }) => what,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[test]
fn a_spawn_key_gets_one_child_and_a_retry_with_a_fresh_id_gets_it_back() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions
        .create(session_header("parent", 1))
        .expect("parent");
    let made = s
        .sessions
        .create_subagent(child("child-1", "tool-1", 'a'))
        .expect("child");
    assert!(made.created);
    assert_eq!(made.header.subagent_parent_session(), Some("parent"));
    let again = s
        .sessions
        .create_subagent(child("child-2", "tool-1", 'a'))
        .expect("retry with a fresh id");
    assert!(!again.created);
    assert_eq!(again.header.id(), "child-1", "the existing child");
    assert!(
        s.sessions.read_session("child-2").expect("read").is_none(),
        "no second child"
    );
    let claims = s.claims.list_subagent_spawn_claims().expect("claims");
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].child_session_id, "child-1");
    assert_eq!(claims[0].child_header.as_ref(), Some(made.header.value()));
    // Another tool call is another key: another child.
    assert!(
        s.sessions
            .create_subagent(child("child-3", "tool-2", 'a'))
            .expect("other")
            .created
    );
    let listed: Vec<String> = s
        .sessions
        .list_sessions()
        .expect("list")
        .iter()
        .map(|h| h.id().to_owned())
        .collect();
    assert_eq!(listed, ["child-1", "child-3", "parent"]);
}

#[test]
fn every_conflict_of_section_5_by_name() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions
        .create(session_header("parent", 1))
        .expect("parent");
    s.sessions
        .create_subagent(child("child-1", "tool-1", 'a'))
        .expect("child");
    let root = storage.describe_root();
    let before = snapshot(&root);
    let reused = conflict(s.sessions.create_subagent(child("child-9", "tool-1", 'b')));
    assert!(reused.contains("reused for different work"), "{reused}");
    let mut moved = child("child-9", "tool-1", 'a');
    moved["subagentParent"]["spawnedBy"]["parentTurnId"] = json!("turn-2");
    let parent = conflict(s.sessions.create_subagent(moved));
    assert!(parent.contains("another subagentParent"), "{parent}");
    let same_id = conflict(s.sessions.create_subagent(child("child-1", "tool-7", 'a')));
    assert!(same_id.contains("already exists"), "{same_id}");
    let taken = conflict(s.sessions.create_subagent(child("parent", "tool-8", 'a')));
    assert!(taken.contains("already exists"), "{taken}");
    assert!(matches!(
        s.sessions.create(session_header("child-1", 1)),
        Err(Error::ClaimConflict { .. })
    ));
    assert_eq!(before, snapshot(&root), "conflicts write nothing");
}

#[test]
fn a_subagent_needs_its_three_objects_and_no_graph_parent() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    let root = storage.describe_root();
    let before = snapshot(&root);
    for key in ["subagentParent", "subagentRuntime", "subagentSpawn"] {
        let mut h = child("c", "tool-1", 'a');
        h.as_object_mut().expect("object").remove(key);
        match s.sessions.create_subagent(h) {
            Err(Error::InvalidRecord { field, .. }) => assert_eq!(field, key),
            other => panic!("without {key}: {other:?}"),
        }
    }
    let mut graph = child("c", "tool-1", 'a');
    graph["subagentParent"]["graph"] = json!({"graphId": "g", "workId": "w", "operatorId": "o"});
    match s.sessions.create_subagent(graph) {
        Err(Error::InvalidRecord { field, .. }) => assert_eq!(field, "subagentParent.graph"),
        other => panic!("a graph parent: {other:?}"),
    }
    assert_eq!(before, snapshot(&root), "refusals write nothing");
}

#[test]
fn a_crash_between_the_claim_and_the_header_is_completed_at_the_next_open() {
    let (_t, storage) = temp_root();
    let wanted = {
        let (_owner, s) = stores::open(&storage);
        let header = makalog::model::SessionHeader::from_value(child("orphan", "tool-1", 'a'))
            .expect("header");
        // What create_subagent claims before it writes the header, and then no header.
        s.claims
            .claim_subagent_spawn(SubagentSpawnClaim {
                parent_session_id: "parent".into(),
                parent_run_id: "run-1".into(),
                tool_call_id: "tool-1".into(),
                swarm_id: String::new(),
                item_id: String::new(),
                request_fingerprint: "a".repeat(64),
                child_session_id: "orphan".into(),
                child_header: Some(header.value().clone()),
            })
            .expect("claim");
        assert!(s.sessions.read_session("orphan").expect("read").is_none());
        header
    };
    let (_owner, s) = stores::open(&storage);
    let completed = s
        .sessions
        .read_session("orphan")
        .expect("read")
        .expect("completed at open");
    assert_eq!(completed, wanted);
    assert_eq!(
        s.sessions.complete_spawns().expect("again"),
        0,
        "completed once"
    );
    let retry = s
        .sessions
        .create_subagent(child("orphan-2", "tool-1", 'a'))
        .expect("a retry");
    assert!(!retry.created);
    assert_eq!(retry.header.id(), "orphan");
}

/// The child's id claim and its spawn claim are made durable by one sync of the claims log;
/// the child's session then costs what any new session's first record does (its segment and
/// its header synced, its directory and `sessions/` synced).
#[test]
fn a_subagent_costs_one_claims_sync_and_a_new_sessions_syncs() {
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
    s.sessions
        .create(session_header("parent", 1))
        .expect("parent");
    let (data, dirs) = (syncs.load(Ordering::SeqCst), storage.meter.all_dir_syncs());
    let made = s
        .sessions
        .create_subagent(child("child-1", "tool-1", 'a'))
        .expect("child");
    assert!(made.created);
    assert_eq!(
        syncs.load(Ordering::SeqCst) - data,
        3,
        "the claims, the segment, the header"
    );
    assert_eq!(
        storage.meter.all_dir_syncs() - dirs,
        2,
        "the child's directory and sessions/"
    );
    assert_eq!(
        storage.meter.maps_of("sessions/child-1/index"),
        1,
        "opening the new child for writing looks for its sidecar once"
    );
}

/// A child's header rides in its spawn claim, one level down: a header nested deeper than the
/// claims log can read back is refused with nothing written (it was written, and then every
/// open of the claims log failed on it), and one that reads back survives a reopen.
#[test]
fn a_header_nested_deeper_than_its_claim_reads_back_is_refused_and_writes_nothing() {
    let (_t, storage) = temp_root();
    let nested = |levels: usize| {
        let mut inner = json!([]);
        for _ in 1..levels {
            inner = json!([inner]);
        }
        let mut h = child("child-deep", "tool-1", 'a');
        h["externalOrigin"] = json!({ "n": inner });
        h
    };
    {
        let (_owner, s) = stores::open(&storage);
        s.sessions
            .create(session_header("parent", 1))
            .expect("parent");
        let root = storage.describe_root();
        let before = snapshot(&root);
        match s.sessions.create_subagent(nested(200)) {
            Err(Error::InvalidInput(why)) => assert!(why.contains("claim"), "{why}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert_eq!(before, snapshot(&root), "a refusal writes nothing");
        s.sessions
            .create_subagent(nested(100))
            .expect("a header its claim reads back");
        s.close().expect("close");
    }
    let (_owner, s) = stores::open(&storage);
    let child = s.sessions.read_session("child-deep").expect("read");
    assert!(child.is_some(), "the child survives a reopen");
}
