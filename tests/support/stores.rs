//! The execution stores over a test root, and the records their tests start from.

use makalog::root::Owner;
use makalog::storage::RealStorage;
use makalog::store::{open_execution_stores_for_write, ExecutionStores};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// The owner lease of `storage`'s root and the execution stores opened under it.
pub fn open(storage: &Arc<RealStorage>) -> (Owner, ExecutionStores) {
    let owner = super::owner(storage);
    let stores = open_execution_stores_for_write(&owner).expect("stores");
    (owner, stores)
}

/// A valid session header (§5) of session `id` created at `created`.
pub fn session_header(id: &str, created: u64) -> Value {
    json!({
        "schemaVersion": 1, "id": id, "workspaceRoot": "/work", "cwd": "/work",
        "name": format!("session {id}"), "llmConnectionSlug": "fake", "model": "fake-model",
        "createdAt": created, "lastUsedAt": created, "titleIsManual": false, "isFlagged": false,
        "isArchived": false, "hasUnread": false, "connectionLocked": false, "labels": [],
        "status": "active", "backend": "fake", "permissionMode": "ask"
    })
}

/// The bytes of every file of a session's directory: what a refusal must leave as it was.
pub fn session_bytes(root: &Path, session: &str) -> u64 {
    std::fs::read_dir(root.join("sessions").join(session))
        .expect("session dir")
        .map(|e| e.expect("entry").metadata().expect("meta").len())
        .sum()
}
