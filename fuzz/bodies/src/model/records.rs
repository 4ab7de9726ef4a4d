//! The records the model target writes, and the configuration it writes them with.

use makalog::claims::AgentGraphIntentClaimRequest;
use makalog::segment::WriterConfig;
use serde_json::{json, Value};

/// Small segments, so a few messages roll and seal them.
pub fn config() -> WriterConfig {
    WriterConfig {
        segment_size: 700,
        prealloc_step: 128,
        max_payload: 4096,
        buffered_limit: 400,
    }
}

/// The operators a graph claim may name: the same again is a retry, the other a conflict.
pub const OPERATORS: [&str; 2] = ["operator-a", "operator-b"];

/// Graph claim `n`, naming `operator`.
pub fn claim_request(n: u8, operator: &str) -> AgentGraphIntentClaimRequest {
    AgentGraphIntentClaimRequest {
        schema_version: 1,
        claim_id: format!("graph_claim_{n:032x}"),
        graph_id: "graph-model".into(),
        intent_id: format!("graph_intent_{n:032x}"),
        intent_fingerprint: format!("sha256:{n:064x}"),
        readiness_context_fingerprint: format!("sha256:{}", "d".repeat(64)),
        target_operator_id: operator.into(),
        target_session_id: "child".into(),
        target_turn_id: format!("turn-{n}"),
        target_run_id: format!("run-{n}"),
    }
}

/// The claim number an intent id carries.
pub fn claim_number(intent_id: &str) -> u8 {
    let hex = intent_id.trim_start_matches("graph_intent_");
    u8::from_str_radix(hex, 16).expect("an intent id of the model")
}

/// A valid session header (§5) of session `s<n>`, created at `n`.
pub fn session_header(n: u32) -> Value {
    json!({
        "schemaVersion": 1, "id": format!("s{n}"), "workspaceRoot": "/work", "cwd": "/work",
        "name": format!("session {n}"), "llmConnectionSlug": "fake", "model": "fake-model",
        "createdAt": n, "lastUsedAt": n, "titleIsManual": false, "isFlagged": false,
        "isArchived": false, "hasUnread": false, "connectionLocked": false, "labels": [],
        "status": "active", "backend": "fake", "permissionMode": "ask"
    })
}

/// A user message `m<n>` of `len` characters.
pub fn message(n: u32, len: u8) -> Value {
    let text: String = "words of a message "
        .chars()
        .cycle()
        .take(usize::from(len))
        .collect();
    json!({"type": "user", "id": format!("m{n}"), "turnId": "t1", "ts": n, "text": text})
}

/// A new run `r<n>` of `session`.
pub fn run(session: &str, n: u32) -> Value {
    run_with_id(session, &format!("r{n}"), n)
}

/// A run header of `session` with the id given.
pub fn run_with_id(session: &str, run_id: &str, n: u32) -> Value {
    json!({
        "runId": run_id, "sessionId": session, "turnId": "t1", "llmConnectionSlug": "fake",
        "modelId": "fake-model", "cwd": "/work", "status": "created", "backendKind": "fake",
        "permissionMode": "ask", "createdAt": n, "updatedAt": n
    })
}
