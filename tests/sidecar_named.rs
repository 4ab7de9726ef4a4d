//! A sidecar whose session header names another session (its checksums and covers intact) is
//! not trusted: the session's directory says which session it is. Trusted, it showed one
//! session under another's id, and a listing that tells sessions by their ids hid one of them.

mod support;

use makalog::index::{decode_sidecar_header, decode_sidecar_state, encode_sidecar, id_entries};
use serde_json::json;
use support::stores::{self, session_header};
use support::temp_root;

#[test]
fn a_sidecar_whose_header_names_another_session_is_not_trusted() {
    let (_t, storage) = temp_root();
    {
        let (_owner, s) = stores::open(&storage);
        for id in ["victim", "evil"] {
            s.sessions.create(session_header(id, 1)).expect("session");
        }
        s.close().expect("close");
    }
    let root = makalog::storage::Storage::describe_root(&*storage);
    let sidecar = |id: &str| root.join("sessions").join(id).join("index");
    let victim = std::fs::read(sidecar("victim")).expect("victim's sidecar");
    let bytes = std::fs::read(sidecar("evil")).expect("evil's sidecar");
    let header = decode_sidecar_header(&bytes).expect("header");
    let mut view = decode_sidecar_state(&bytes, &header).expect("state");
    let theirs = decode_sidecar_header(&victim)
        .and_then(|h| decode_sidecar_state(&victim, &h))
        .expect("victim's state");
    view.session.header = theirs.session.header.clone();
    let ids = makalog::index::section(&bytes, &header, 2)
        .and_then(id_entries)
        .expect("ids");
    std::fs::write(
        sidecar("evil"),
        encode_sidecar(&view, &ids).expect("encode"),
    )
    .expect("craft");
    let reader = makalog::store::ReadOnlySessions::new(&*storage);
    let (headers, unreadable) = reader.list_readable_sessions().expect("list");
    assert!(unreadable.is_empty(), "{unreadable:?}");
    let mut listed: Vec<&str> = headers.iter().map(|h| h.id()).collect();
    listed.sort_unstable();
    assert_eq!(listed, ["evil", "victim"], "each session under its own id");
    let evil = reader.read_session("evil").expect("read").expect("evil");
    assert_eq!(evil.id(), "evil");
    // The owner opens the session for writing (a message appended), then reads it.
    let (_owner, s) = stores::open(&storage);
    let message = json!({"type": "user", "id": "m1", "turnId": "turn-1", "ts": 2, "text": "hi"});
    s.sessions.append_message("evil", message).expect("append");
    let evil = s
        .sessions
        .read_session("evil")
        .expect("read")
        .expect("evil");
    assert_eq!(evil.id(), "evil", "by the owner too");
}
