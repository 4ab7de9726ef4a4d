//! Recovery at start of a root of `sessions` closed sessions, `interrupted` of them with a run
//! a crash left running, beside opening every session of the same root.

use super::common::{scratch, BenchResult};
use makalog::root::try_acquire_owner;
use makalog::runtime::{BackendRegistry, ExecutionComposition, Sources};
use makalog::store::open_execution_stores_for_write;
use serde_json::json;
use std::time::Instant;

fn header(id: &str) -> serde_json::Value {
    json!({"schemaVersion": 1, "id": id, "workspaceRoot": "/w", "cwd": "/w", "name": id,
           "llmConnectionSlug": "fake", "model": "fake-model", "createdAt": 1, "lastUsedAt": 1,
           "titleIsManual": false, "isFlagged": false, "isArchived": false, "hasUnread": false,
           "connectionLocked": false, "labels": [], "status": "active", "backend": "fake",
           "permissionMode": "ask"})
}

/// Milliseconds: recovery (open and `recover()`), then opening every session.
pub fn recovery_case(sessions: usize, interrupted: usize) -> BenchResult<(f64, f64)> {
    let dir = scratch()?;
    let root = dir.path().join("root");
    let ids: Vec<String> = (0..sessions).map(|n| format!("s-{n:05}")).collect();
    {
        let owner = try_acquire_owner(&root)?.ok_or("busy")?;
        let stores = open_execution_stores_for_write(&owner)?;
        for (n, id) in ids.iter().enumerate() {
            stores.sessions.create(header(id))?;
            if n % (sessions / interrupted.max(1)).max(1) == 0 {
                stores
                    .runs
                    .create_run(json!({"runId": "r", "sessionId": id, "turnId": "t",
                    "llmConnectionSlug": "fake", "modelId": "fake-model", "cwd": "/w",
                    "status": "running", "backendKind": "fake", "permissionMode": "ask",
                    "createdAt": 1, "updatedAt": 1}))?;
            }
        }
        stores.close()?;
    }
    // Both read the same files; the page cache is warm for both.
    let open_all = {
        let owner = try_acquire_owner(&root)?.ok_or("busy")?;
        let stores = open_execution_stores_for_write(&owner)?;
        let start = Instant::now();
        for id in &ids {
            stores.runtime_events.open_session_now(id)?;
        }
        let took = start.elapsed();
        stores.close()?;
        took
    };
    let owner = try_acquire_owner(&root)?.ok_or("busy")?;
    let start = Instant::now();
    let c = ExecutionComposition::open(
        &owner,
        BackendRegistry::with_instant_fake(),
        Sources::system(),
    )?;
    let report = c.recover()?;
    let recover = start.elapsed();
    let want = (0..sessions)
        .filter(|n| n % (sessions / interrupted.max(1)).max(1) == 0)
        .count();
    if report.recovered.len() != want {
        return Err(format!("recovered {} of {want}", report.recovered.len()).into());
    }
    c.close()?;
    Ok((recover.as_secs_f64() * 1e3, open_all.as_secs_f64() * 1e3))
}
