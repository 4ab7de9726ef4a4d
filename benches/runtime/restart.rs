//! Recovery at start of a root of `sessions` sessions, `interrupted` of them with a turn a
//! crash left waiting: recovery with the open-runs file (the sessions it names; the best of
//! three, each on a fresh copy), recovery without it (every session: a root from before the
//! file), and opening every session (the best of three).

use super::common::{scratch, BenchResult};
use makalog::root::try_acquire_owner;
use makalog::runtime::{TurnInput, FAKE_ASK_USER_QUESTION_PROMPT, OPEN_RUNS_FILE};
use makalog::store::open_execution_stores_for_write;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

fn header(id: &str) -> serde_json::Value {
    json!({"schemaVersion": 1, "id": id, "workspaceRoot": "/w", "cwd": "/w", "name": id,
           "llmConnectionSlug": "fake", "model": "fake-model", "createdAt": 1, "lastUsedAt": 1,
           "titleIsManual": false, "isFlagged": false, "isArchived": false, "hasUnread": false,
           "connectionLocked": false, "labels": [], "status": "active", "backend": "fake",
           "permissionMode": "ask"})
}

/// What the case measured, in milliseconds.
pub struct Recovery {
    pub with_file: f64,
    pub without_file: f64,
    pub open_all: f64,
}

/// Leaves a turn waiting for an answer in each of `sessions`, then stops the process's runtime
/// under them (what a crash leaves).
fn interrupt(root: &Path, sessions: &[String]) -> BenchResult<()> {
    let owner = try_acquire_owner(root)?.ok_or("busy")?;
    let c = super::composition(&owner)?;
    c.recover()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()?;
    rt.block_on(async {
        for s in sessions {
            let input = TurnInput {
                text: FAKE_ASK_USER_QUESTION_PROMPT.into(),
                ..TurnInput::default()
            };
            let mut turn = c.manager().send_message(s, input).await?;
            while let Some(e) = turn.events.recv().await {
                if e.type_name() == "user_question_request" {
                    break;
                }
            }
            turn.abandon().await;
        }
        Ok::<(), makalog::Error>(())
    })?;
    rt.shutdown_timeout(Duration::from_secs(10));
    c.close()?;
    Ok(())
}

/// A fresh composition's recovery, in ms; it must end `want` runs.
fn time_recovery(root: &Path, want: usize) -> BenchResult<f64> {
    let owner = try_acquire_owner(root)?.ok_or("busy")?;
    let start = Instant::now();
    let c = super::composition(&owner)?;
    let report = c.recover()?;
    let took = start.elapsed();
    if report.recovered.len() != want {
        return Err(format!("recovered {} of {want}", report.recovered.len()).into());
    }
    c.close()?;
    Ok(took.as_secs_f64() * 1e3)
}

pub fn recovery_case(sessions: usize, interrupted: usize) -> BenchResult<Recovery> {
    let dir = scratch()?;
    let root = dir.path().join("root");
    let ids: Vec<String> = (0..sessions).map(|n| format!("s-{n:05}")).collect();
    {
        let owner = try_acquire_owner(&root)?.ok_or("busy")?;
        let stores = open_execution_stores_for_write(&owner)?;
        for id in &ids {
            stores.sessions.create(header(id))?;
        }
        stores.close()?;
    }
    let step = (sessions / interrupted.max(1)).max(1);
    let hit: Vec<String> = ids
        .iter()
        .step_by(step)
        .take(interrupted)
        .cloned()
        .collect();
    interrupt(&root, &hit)?;
    // Each side the best of three, so one slow moment of a shared disk decides neither.
    let mut open_all = f64::MAX;
    for _ in 0..3 {
        let owner = try_acquire_owner(&root)?.ok_or("busy")?;
        let stores = open_execution_stores_for_write(&owner)?;
        let start = Instant::now();
        for id in &ids {
            stores.runtime_events.open_session_now(id)?;
        }
        open_all = open_all.min(start.elapsed().as_secs_f64() * 1e3);
        stores.close()?;
    }
    // Without the file (a root from before it), on a copy of the same state: every session.
    let copy = dir.path().join("copy");
    copy_tree(&root, &copy)?;
    std::fs::remove_file(copy.join(OPEN_RUNS_FILE))?;
    let without_file = time_recovery(&copy, hit.len())?;
    // With it, each time on a fresh copy of the interrupted root.
    let mut with_file = f64::MAX;
    for k in 0..3 {
        let copy = dir.path().join(format!("copy-{k}"));
        copy_tree(&root, &copy)?;
        with_file = with_file.min(time_recovery(&copy, hit.len())?);
    }
    Ok(Recovery {
        with_file,
        without_file,
        open_all,
    })
}

fn copy_tree(from: &Path, to: &Path) -> BenchResult<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &target)?;
        } else if e.file_name() != "owner.lock" {
            std::fs::copy(e.path(), target)?;
        }
    }
    Ok(())
}
