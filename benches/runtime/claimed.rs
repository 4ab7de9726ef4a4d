//! Claimed-intent runs: `n` linked children, each with a claimed intent, run once and then
//! retried (the retry answers from the ledger).

use super::common::{owner, scratch, BenchResult};
use makalog::runtime::{AgentGraphRunnableIntent, ClaimedIntentRun};
use serde_json::json;
use std::time::Instant;

fn child(n: usize) -> serde_json::Value {
    json!({
        "schemaVersion": 1, "id": format!("c-{n}"), "workspaceRoot": "/w", "cwd": "/w",
        "name": "child", "llmConnectionSlug": "fake", "model": "fake-model", "createdAt": 1,
        "lastUsedAt": 1, "titleIsManual": false, "isFlagged": false, "isArchived": false,
        "hasUnread": false, "connectionLocked": false, "labels": [], "status": "active",
        "backend": "fake", "permissionMode": "explore",
        "subagentParent": {"kind": "subagent", "parentSessionId": "p", "lifecycle": "foreground",
            "spawnedBy": {"parentRunId": "pr", "parentTurnId": "pt", "toolCallId": format!("t-{n}")}},
        "subagentRuntime": {"schemaVersion": 1, "definitionVersion": 1, "agentId": "local-read",
            "agentName": "Local Read", "profile": "local_read", "systemPrompt": "read",
            "toolNames": [], "categoryPolicy": {}},
        "subagentSpawn": {"schemaVersion": 1, "requestFingerprint": format!("{n:064x}"),
            "initialTurnId": format!("turn-{n}"), "initialRunId": format!("run-{n}")}
    })
}

fn intent(n: usize) -> AgentGraphRunnableIntent {
    AgentGraphRunnableIntent {
        schema_version: 1,
        intent_id: format!("graph_intent_{n:032x}"),
        graph_id: "bench-graph".into(),
        readiness_context_fingerprint: format!("sha256:{}", "b".repeat(64)),
        policy_fingerprint: format!("sha256:{}", "c".repeat(64)),
        readiness_id: "readiness".into(),
        operator_id: "local-read".into(),
        target_session_id: format!("c-{n}"),
        policy_kind: "map".into(),
        trigger_route_ids: vec![],
        trigger_record_ids: vec![],
    }
}

const PROMPT: &str = "summarize the record";

/// Runs per second, then retries per second.
pub fn claimed_case(n: usize) -> BenchResult<(f64, f64)> {
    let dir = scratch()?;
    let owner = owner(dir.path())?;
    let c = super::composition(&owner)?;
    let mut parent = child(0);
    for key in ["subagentParent", "subagentRuntime", "subagentSpawn"] {
        parent.as_object_mut().map(|o| o.remove(key));
    }
    parent["id"] = json!("p");
    c.stores().sessions.create(parent)?;
    for i in 0..n {
        c.stores().sessions.create_subagent(child(i))?;
        let it = intent(i);
        let request = it.claim_request(PROMPT, &format!("turn-{i}"), &format!("run-{i}"))?;
        c.stores().claims.claim_agent_graph_intent(request)?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()?;
    let call = |i: usize| {
        ClaimedIntentRun::new(
            intent(i),
            "bench-graph",
            format!("graph_intent_{i:032x}"),
            PROMPT,
        )
    };
    let mut rates = [0.0; 2];
    for rate in &mut rates {
        let start = Instant::now();
        for i in 0..n {
            let result = rt.block_on(c.manager().run_claimed_agent_graph_intent(call(i)))?;
            if result.status != "completed" {
                return Err(format!("claim {i} ended {}", result.status).into());
            }
        }
        *rate = n as f64 / start.elapsed().as_secs_f64();
    }
    drop(rt);
    c.close()?;
    Ok((rates[0], rates[1]))
}
