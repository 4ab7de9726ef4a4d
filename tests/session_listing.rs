//! list_sessions: every header written after its first answer seen, and every acknowledged
//! header kept under concurrent writes.

mod support;

use serde_json::json;
use support::messages::*;
use support::stores::{self, session_header};
use support::temp_root;

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
