//! Messages and headers as the session-store tests write and compare them.

use makalog::model::{SessionHeader, StoredMessage};
use makalog::store::ExecutionStores;
use serde_json::{json, Value};

pub fn user(id: &str, turn: &str, ts: u64) -> Value {
    json!({"type": "user", "id": id, "turnId": turn, "ts": ts, "text": format!("text of {id}")})
}

/// Appends message `m` to session "s": its canonical JSON as stored.
pub fn appended(s: &ExecutionStores, m: Value) -> String {
    s.sessions
        .append_message("s", m)
        .expect("append")
        .canonical_json()
        .to_owned()
}

/// Messages as their canonical JSON.
pub fn texts(got: Vec<StoredMessage>) -> Vec<String> {
    got.iter().map(|m| m.canonical_json().to_owned()).collect()
}

pub fn ids(headers: &[SessionHeader]) -> Vec<&str> {
    headers.iter().map(SessionHeader::id).collect()
}
