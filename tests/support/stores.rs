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

/// A run header (§7) of `session` at `status`, its turn `turn-<run>` and its invocation its id.
pub fn run_header(session: &str, run: &str, status: &str) -> Value {
    json!({"runId": run, "sessionId": session, "turnId": format!("turn-{run}"),
           "llmConnectionSlug": "fake", "modelId": "fake-model", "cwd": "/work", "status": status,
           "backendKind": "fake", "permissionMode": "ask", "createdAt": 1, "updatedAt": 1,
           "invocationId": run})
}

/// A fingerprint of every file of a session's directory, names and bytes: what a refusal must
/// leave as it was (a length would miss a record written into a segment's preallocated zeros).
pub fn session_files(root: &Path, session: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut files: Vec<(std::ffi::OsString, Vec<u8>)> =
        std::fs::read_dir(root.join("sessions").join(session))
            .expect("session dir")
            .map(|e| {
                let e = e.expect("entry");
                (e.file_name(), std::fs::read(e.path()).expect("read"))
            })
            .collect();
    files.sort();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    files.hash(&mut h);
    h.finish()
}

/// A valid subagent header (§5) of session `id`, spawned by tool call `tool_call` of run `run-1`
/// of session `parent`, its request fingerprint 64 × `fingerprint`.
pub fn subagent_header(id: &str, tool_call: &str, fingerprint: char) -> Value {
    let mut h = session_header(id, 1);
    h["subagentParent"] = json!({
        "kind": "subagent", "parentSessionId": "parent",
        "spawnedBy": {"parentRunId": "run-1", "parentTurnId": "turn-1", "toolCallId": tool_call},
        "lifecycle": "foreground"
    });
    h["subagentRuntime"] = json!({
        "schemaVersion": 1, "definitionVersion": 1, "agentId": "agent-1", "agentName": "Helper",
        "profile": "default", "systemPrompt": "Help.", "toolNames": ["read"],
        "categoryPolicy": {"filesystem": "allow"}
    });
    h["subagentSpawn"] = json!({
        "schemaVersion": 1, "requestFingerprint": fingerprint.to_string().repeat(64),
        "initialTurnId": "turn-c", "initialRunId": "run-c"
    });
    h
}

/// A temporary root, its owner, and the execution stores opened under it.
pub struct StoresRoot {
    pub stores: Arc<ExecutionStores>,
    pub owner: Owner,
    pub storage: Arc<RealStorage>,
    /// Last, so the directory goes after what writes in it.
    pub dir: tempfile::TempDir,
}

impl StoresRoot {
    pub fn new() -> StoresRoot {
        let (dir, storage) = super::temp_root();
        let (owner, stores) = open(&storage);
        StoresRoot {
            dir,
            storage,
            owner,
            stores: Arc::new(stores),
        }
    }

    /// A new root whose stores hold session `id` (created at 1), and nothing else.
    pub fn with_session(id: &str) -> StoresRoot {
        let r = StoresRoot::new();
        r.stores
            .sessions
            .create(session_header(id, 1))
            .expect("session");
        r
    }

    /// The root's directory as a string, as the graph helpers take it.
    pub fn root(&self) -> String {
        use makalog::storage::Storage;
        self.storage.describe_root().display().to_string()
    }

    /// A runtime over the stores with the fake backend and the system's ids and clock.
    pub fn manager(&self) -> makalog::runtime::SessionManager {
        makalog::runtime::SessionManager::new(
            self.stores.clone(),
            makalog::runtime::BackendRegistry::with_fake(),
            makalog::runtime::Sources::system(),
        )
        .expect("manager")
    }
}

/// Creates run `id` of `s` (turn `turn-<id>`) and sets it running, as a turn's opening does.
pub fn running_run(stores: &ExecutionStores, s: &str, id: &str) {
    stores
        .runs
        .create_run(run_header(s, id, "created"))
        .expect("run");
    stores
        .runs
        .update_run(s, id, &json!({"status": "running", "updatedAt": 2}))
        .expect("status");
}

/// The latest `turn_state` of `turn` in session `s` (of the session's last turn when `turn` is
/// `None`).
pub fn latest_turn_state(stores: &ExecutionStores, s: &str, turn: Option<&str>) -> Value {
    stores
        .sessions
        .read_messages(s, turn)
        .expect("messages")
        .into_iter()
        .rev()
        .find(|m| m.message_type() == "turn_state")
        .expect("a turn_state")
        .value()
        .clone()
}
