//! What a session's claims may hold, and what they must never do to a root: a header that
//! cannot be written is refused before its id or spawn is claimed; a spawn claim carries its
//! own child's header or none; and a child whose session is damaged does not keep the root's
//! stores from opening.

mod support;

use makalog::claims::SubagentSpawnClaim;
use makalog::model::SessionHeader;
use makalog::storage::Storage;
use makalog::Error;
use serde_json::{json, Value};
use support::stores::{self, session_header, subagent_header};
use support::{snapshot, temp_root};

/// A header whose canonical JSON is over the 4 MiB bound of a record: 5 MiB of labels.
fn with_big_labels(mut header: Value) -> Value {
    header["labels"] = json!(vec!["x".repeat(1 << 10); 5 << 10]);
    header
}

/// `header` with its name padded so that its canonical JSON is `len` bytes.
fn padded_to(mut header: Value, len: usize) -> Value {
    let now = SessionHeader::from_value(header.clone()).expect("header");
    let name = header["name"].as_str().expect("name").len();
    header["name"] = json!("n".repeat(len - (now.canonical_json().len() - name)));
    header
}

/// One byte more than a host's header may hold: the record bound less the runtime's room.
fn one_past_the_room() -> usize {
    makalog::format::DEFAULT_MAX_PAYLOAD as usize - makalog::model::RUNTIME_FIELDS_ROOM + 1
}

fn refused_as_too_big<T: std::fmt::Debug>(r: makalog::Result<T>) {
    match r {
        Err(Error::InvalidRecord { record, why, .. }) => {
            assert_eq!(record, "session header");
            assert!(why.contains("bound"), "{why}");
        }
        other => panic!("expected the header refused for its size, got {other:?}"),
    }
}

#[test]
fn a_header_too_big_to_write_is_refused_before_its_id_is_claimed() {
    let (_t, storage) = temp_root();
    {
        let (_owner, s) = stores::open(&storage);
        refusals_write_nothing(&storage, &s);
    }
    let (_owner, s) = stores::open(&storage);
    assert!(s.sessions.read_session("kid").expect("read").is_some());
}

fn refusals_write_nothing(
    storage: &std::sync::Arc<makalog::storage::RealStorage>,
    s: &makalog::store::ExecutionStores,
) {
    s.sessions
        .create(session_header("parent", 1))
        .expect("parent");
    let root = storage.describe_root();
    let before = snapshot(&root);
    refused_as_too_big(s.sessions.create(with_big_labels(session_header("big", 1))));
    refused_as_too_big(
        s.sessions
            .create_subagent(with_big_labels(subagent_header("kid", "tool-1", 'a'))),
    );
    // Numbers serde_json prints short and canonical JSON prints whole: the spawn claim that
    // carries this header fits the claims log (about 1.3 MB) while the header (about 5.5 MB)
    // does not fit a segment. Claimed first, it was a claim no open could complete.
    let mut padded = subagent_header("padded", "tool-2", 'b');
    padded["subagentWorkspace"] = json!({"pad": vec![1e20; 250_000]});
    refused_as_too_big(s.sessions.create_subagent(padded));
    // Within the bound, but not leaving room for the fields the runtime sets on it.
    let near = one_past_the_room();
    refused_as_too_big(s.sessions.create(padded_to(session_header("big", 1), near)));
    refused_as_too_big(
        s.sessions
            .create_subagent(padded_to(subagent_header("kid", "tool-1", 'a'), near)),
    );
    for id in ["big", "kid", "padded"] {
        assert!(!s.claims.is_session_id_taken(id).expect("claims"), "{id}");
    }
    assert_eq!(before, snapshot(&root), "refusals write nothing");
    s.sessions
        .create(padded_to(session_header("big", 1), near - 1))
        .expect("the id is still free, and a header leaving the room is taken");
    let kid = s
        .sessions
        .create_subagent(subagent_header("kid", "tool-1", 'a'))
        .expect("the id and the spawn are still free");
    assert!(kid.created);
}

/// A spawn claim taken alone, as `claim_subagent_spawn` takes one, of child `child` under the
/// key of `subagent_header(_, "tool-1", 'a')`, carrying `header`.
fn spawn(child: &str, header: Option<Value>) -> SubagentSpawnClaim {
    SubagentSpawnClaim {
        parent_session_id: "parent".into(),
        parent_run_id: "run-1".into(),
        tool_call_id: "tool-1".into(),
        swarm_id: String::new(),
        item_id: String::new(),
        request_fingerprint: "a".repeat(64),
        child_session_id: child.into(),
        child_header: header,
    }
}

#[test]
fn a_spawn_claim_carries_its_own_childs_header_or_none() {
    let (_t, storage) = temp_root();
    let root = storage.describe_root();
    {
        let (_owner, s) = stores::open(&storage);
        let before = snapshot(&root);
        let valid = |id: &str| {
            SessionHeader::from_value(subagent_header(id, "tool-1", 'a'))
                .expect("header")
                .value()
                .clone()
        };
        let mut other_work = valid("c");
        other_work["subagentSpawn"]["requestFingerprint"] = json!("b".repeat(64));
        let mut other_call = valid("c");
        other_call["subagentParent"]["spawnedBy"]["toolCallId"] = json!("tool-9");
        let bad = [
            ("not a header", json!({"x": 1})),
            ("another session's", valid("d")),
            ("another request's", other_work),
            ("another tool call's", other_call),
            ("a plain session's", session_header("c", 1)),
        ];
        for (what, header) in bad {
            match s.claims.claim_subagent_spawn(spawn("c", Some(header))) {
                Err(Error::InvalidInput(why) | Error::InvalidRecord { why, .. }) => {
                    assert!(!why.is_empty(), "{what}")
                }
                other => panic!("{what} header: {other:?}"),
            }
        }
        assert_eq!(before, snapshot(&root), "refusals write nothing");
        s.claims
            .claim_subagent_spawn(spawn("c", Some(valid("c"))))
            .expect("its own child's header");
    }
    let (_owner, s) = stores::open(&storage);
    let child = s
        .sessions
        .read_session("c")
        .expect("read")
        .expect("completed");
    assert_eq!(child.subagent_parent_session(), Some("parent"));
}

#[test]
fn a_damaged_child_does_not_keep_the_roots_stores_from_opening() {
    let (t, storage) = temp_root();
    {
        let (_owner, s) = stores::open(&storage);
        s.sessions
            .create(session_header("parent", 1))
            .expect("parent");
        s.sessions
            .create_subagent(subagent_header("kid", "tool-1", 'a'))
            .expect("child");
        for i in 0..3 {
            s.sessions
                .append_message(
                    "kid",
                    json!({"type": "user", "id": format!("m{i}"),
                    "turnId": "t", "ts": i, "text": "hello"}),
                )
                .expect("message");
        }
        s.close().expect("close");
    }
    let dir = t.path().join("root/sessions/kid");
    std::fs::remove_file(dir.join("index")).expect("no sidecar vouches for it");
    let segment = dir.join("00000000000000000001.seg");
    let mut bytes = std::fs::read(&segment).expect("segment");
    // A byte of the first frame's payload (the header record, right after the segment's
    // 256-byte header and the frame's own): damage with valid frames after it.
    bytes[256 + 40] ^= 0x55;
    std::fs::write(&segment, &bytes).expect("damaged");
    let (_owner, s) = stores::open(&storage);
    match s.sessions.read_session("kid") {
        Err(Error::Corrupt { .. }) => {}
        other => panic!("the damaged child is refused: {other:?}"),
    }
    assert!(s.sessions.read_session("parent").expect("read").is_some());
}

/// A spawn refused for its key (another fingerprint holds it) takes no id: the id claim went
/// into the log first and stayed there, durable, when the spawn beside it was refused.
#[test]
fn a_spawn_refused_for_its_key_takes_no_id() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.claims
        .claim_session_and_spawn(spawn("c", None))
        .expect("the first spawn of the key");
    let mut other = spawn("z", None);
    other.request_fingerprint = "b".repeat(64);
    let root = storage.describe_root();
    let before = snapshot(&root);
    match s.claims.claim_session_and_spawn(other) {
        Err(Error::ClaimConflict { .. }) => {}
        other => panic!("another request's spawn of the key: {other:?}"),
    }
    assert!(!s.claims.is_session_id_taken("z").expect("claims"));
    assert_eq!(before, snapshot(&root), "nothing written");
}
