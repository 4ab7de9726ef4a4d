//! The session store: sessions created, updated and listed, messages appended and read by
//! turn, each answer after reopening equal to the one rebuilt from the segments alone, and bad
//! input refused with a typed error and nothing written.

mod support;

use makalog::index::rebuild;
use makalog::model::{SessionHeader, StoredMessage};
use makalog::storage::Storage;
use makalog::store::ExecutionStores;
use makalog::Error;
use serde_json::{json, Value};
use support::stores::{self, session_header};
use support::{snapshot, temp_root};

fn user(id: &str, turn: &str, ts: u64) -> Value {
    json!({"type": "user", "id": id, "turnId": turn, "ts": ts, "text": format!("text of {id}")})
}

/// Appends message `m` to session "s": its canonical JSON as stored.
fn appended(s: &ExecutionStores, m: Value) -> String {
    s.sessions
        .append_message("s", m)
        .expect("append")
        .canonical_json()
        .to_owned()
}

/// Messages as their canonical JSON.
fn texts(got: Vec<StoredMessage>) -> Vec<String> {
    got.iter().map(|m| m.canonical_json().to_owned()).collect()
}

fn ids(headers: &[SessionHeader]) -> Vec<&str> {
    headers.iter().map(SessionHeader::id).collect()
}

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

/// Many messages of one segment are read back in one read of their span; a message longer
/// than the span holds past its start, in any position, is read on its own, and every segment
/// of a rolled session is read back in order.
#[test]
fn many_messages_read_back_in_order_whatever_their_lengths_and_segments() {
    let (_t, storage) = temp_root();
    let owner = support::owner(&storage);
    let config = makalog::segment::WriterConfig {
        segment_size: 16 << 10,
        ..makalog::segment::WriterConfig::default()
    };
    let s = makalog::store::open_execution_stores_with(&owner, config).expect("stores");
    s.sessions.create(session_header("s", 1)).expect("session");
    let mut sent = Vec::new();
    for i in 0..200u64 {
        let mut m = user(&format!("m{i}"), &format!("t{}", i % 3), i);
        if i % 37 == 0 || i == 199 {
            m["text"] = json!("long ".repeat(600));
        }
        sent.push(appended(&s, m));
    }
    assert_eq!(
        texts(s.sessions.read_messages("s", None).expect("live")),
        sent
    );
    s.close().expect("close");
    let segments = std::fs::read_dir(storage.describe_root().join("sessions/s"))
        .expect("dir")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".seg"))
        })
        .count();
    assert!(segments > 1, "{segments} segments: the session rolled");
    let read_only = makalog::store::ReadOnlySessions::new(&*storage);
    assert_eq!(
        texts(read_only.read_messages("s", None).expect("read-only")),
        sent
    );
    let turn: Vec<String> = sent
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 == 1)
        .map(|(_, m)| m.clone())
        .collect();
    assert_eq!(
        texts(read_only.read_messages("s", Some("t1")).expect("turn")),
        turn
    );
}

/// A read long enough to be shared by several threads (more than 2,048 messages a part) gives
/// exactly what one thread gives: every message once, in append order, also by turn.
#[test]
fn a_long_read_shared_by_threads_keeps_append_order() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions
        .create(session_header("long", 1))
        .expect("session");
    let n = 4_200u64;
    for i in 0..n {
        let turn = format!("t{}", i % 5);
        s.sessions
            .append_message("long", user(&format!("m{i}"), &turn, i))
            .expect("append");
    }
    let read_only = makalog::store::ReadOnlySessions::new(&*storage);
    let ids = |got: Vec<StoredMessage>| -> Vec<String> {
        got.iter().map(|m| m.id().to_owned()).collect()
    };
    let all: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
    assert_eq!(
        ids(s.sessions.read_messages("long", None).expect("owner's")),
        all
    );
    assert_eq!(
        ids(read_only.read_messages("long", None).expect("read-only")),
        all
    );
    let turn: Vec<String> = (0..n)
        .filter(|i| i % 5 == 3)
        .map(|i| format!("m{i}"))
        .collect();
    assert_eq!(
        ids(read_only.read_messages("long", Some("t3")).expect("turn")),
        turn
    );
    // Damage in both halves: the refusal is the first one in append order, as on one thread.
    let records = support::read_all(&*storage, "long").expect("records");
    let frame_of = |id: &str| {
        let needle = format!("\"id\":\"{id}\"");
        records
            .iter()
            .find(|r| String::from_utf8_lossy(&r.payload).contains(&needle))
            .map(|r| (r.file.clone(), r.offset))
            .expect("the message's frame")
    };
    let root = storage.describe_root();
    for id in ["m3000", "m100"] {
        let (file, offset) = frame_of(id);
        let path = root.join(&file);
        let mut bytes = std::fs::read(&path).expect("segment");
        let text = format!("text of {id}\"");
        let at = bytes
            .windows(text.len())
            .position(|w| w == text.as_bytes())
            .expect("the text");
        assert!(at as u64 > offset, "inside the frame");
        bytes[at] ^= 0x20;
        std::fs::write(&path, bytes).expect("damage");
    }
    let (_, first) = frame_of("m100");
    match read_only.read_messages("long", None) {
        Err(Error::Corrupt { offset, .. }) => assert_eq!(offset, first, "m100's frame"),
        other => panic!("{other:?}"),
    }
}

/// The owner's list_sessions answers from a catalog of headers built on first use: every
/// header written after it was built (a new session, an update, a subagent, a raw header
/// record) is listed at once, and the listing equals the read-only one of the files.
#[test]
fn list_sessions_sees_every_header_written_after_its_first_answer() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("a", 1)).expect("a");
    assert_eq!(ids(&s.sessions.list_sessions().expect("list")), ["a"]);
    s.sessions.create(session_header("b", 2)).expect("b");
    let mut renamed = session_header("a", 1);
    renamed["name"] = json!("renamed");
    s.sessions.update_session(renamed).expect("update");
    let mut raw = session_header("c", 3);
    raw["name"] = json!("raw");
    s.runtime_events
        .append_record(
            "c",
            makalog::format::RecordKind::SessionHeader,
            makalog::model::SessionHeader::from_value(raw)
                .expect("header")
                .canonical_json()
                .as_bytes(),
        )
        .expect("raw header");
    let listed = s.sessions.list_sessions().expect("list");
    assert_eq!(ids(&listed), ["a", "b", "c"]);
    assert_eq!(listed[0].value()["name"], "renamed");
    assert_eq!(
        listed,
        makalog::store::ReadOnlySessions::new(&*storage)
            .list_sessions()
            .expect("read-only"),
        "the catalog answers what the files hold"
    );
}

/// Listings taken while eight writers create sessions and rewrite their headers never show a
/// header older than one already acknowledged, and the last equals the files'.
#[test]
fn list_sessions_under_concurrent_header_writes_keeps_every_acknowledged_header() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("seed", 0)).expect("seed");
    s.sessions.list_sessions().expect("built");
    let acked = std::sync::Mutex::new(std::collections::BTreeMap::<String, u64>::new());
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for t in 0..8 {
            let (s, acked) = (&s, &acked);
            scope.spawn(move || {
                let id = format!("w{t}");
                s.sessions.create(session_header(&id, 1)).expect("create");
                acked.lock().expect("acked").insert(id.clone(), 1);
                for used in 2..30u64 {
                    let mut h = session_header(&id, 1);
                    h["lastUsedAt"] = json!(used);
                    s.sessions.update_session(h).expect("update");
                    acked.lock().expect("acked").insert(id.clone(), used);
                }
            });
        }
        let (s, acked, done) = (&s, &acked, &done);
        scope.spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let before = acked.lock().expect("acked").clone();
                let listed = s.sessions.list_sessions().expect("list");
                for (id, used) in before {
                    let h = listed
                        .iter()
                        .find(|h| h.id() == id)
                        .unwrap_or_else(|| panic!("{id} was acknowledged but not listed"));
                    let got = h.value()["lastUsedAt"].as_u64().expect("lastUsedAt");
                    assert!(got >= used, "{id}: listed {got}, {used} was acknowledged");
                }
            }
        });
        while acked
            .lock()
            .expect("acked")
            .values()
            .filter(|v| **v == 29)
            .count()
            < 8
        {
            std::thread::yield_now();
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    assert_eq!(
        s.sessions.list_sessions().expect("list"),
        makalog::store::ReadOnlySessions::new(&*storage)
            .list_sessions()
            .expect("read-only")
    );
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

/// A long read takes the log a window at a time: frames that straddle a window's end, and one
/// longer than a window, read back whole and in order.
#[test]
fn messages_straddling_the_read_window_read_back_whole() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    let window = makalog::segment::WINDOW as usize;
    let mut sent = Vec::new();
    for i in 0..400u64 {
        let mut m = user(&format!("m{i}"), "t", i);
        let len = match i % 4 {
            0 => 10,
            1 => 3_000,
            2 => 9_000,
            _ => 500,
        };
        let len = if i == 201 { window + 5_000 } else { len };
        m["text"] = json!("x".repeat(len));
        sent.push(appended(&s, m));
    }
    s.close().expect("close");
    let got = texts(
        makalog::store::ReadOnlySessions::new(&*storage)
            .read_messages("s", None)
            .expect("read"),
    );
    assert!(
        sent.iter().map(String::len).sum::<usize>() > 4 * window,
        "the read spans several windows"
    );
    assert_eq!(got, sent);
}

/// Positions from a damaged index (offsets at the end of the range) are an error naming the
/// segment, never an overflow, however many of them there are.
#[test]
fn frames_read_at_impossible_offsets_are_an_error_not_an_overflow() {
    let (_t, storage) = temp_root();
    let (_owner, s) = stores::open(&storage);
    s.sessions.create(session_header("s", 1)).expect("session");
    s.close().expect("close");
    let mut frames = makalog::segment::FramesAt::new(&*storage, "s");
    let positions = vec![(0, u64::MAX - 5, 1); 20];
    let err = frames
        .each_payload(&positions, |_, _| Ok(()))
        .expect_err("no frame there");
    assert!(err.to_string().contains(".seg"), "{err}");
}
